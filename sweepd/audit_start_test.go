package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryAuditLogAtStart: sweepd starts after a crash left a torn tail
// (set aside, recorded, reported by audit verify as a recovery), and
// refuses to start, naming the line, when a byte in the middle changed.
func TestBinaryAuditLogAtStart(t *testing.T) {
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		fatal  string // empty: sweepd starts
	}{
		{"torn tail", func(b []byte) []byte { return append(b, `{"seq":99,"time":"2026-`...) }, ""},
		{"garbage after the last record", func(b []byte) []byte { return append(b, "\x00\x00\x00\n"...) }, ""},
		{"one byte changed in the middle", func(b []byte) []byte {
			second := bytes.IndexByte(b, '\n') + 1 // the middle record of three
			i := second + bytes.Index(b[second:], []byte(`"action":"start"`)) + len(`"action":"star`)
			b[i] = 'T'
			return b
		}, "broken at line 3: prev does not match the hash of line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			env := append(cleanEnv(t), "XDG_STATE_HOME="+state)
			logPath := filepath.Join(state, "bastion", "sweepd.audit.jsonl")
			for range 3 { // three starts: three records
				if r := runBin(t, env, "--root", root); r.Code != 0 {
					t.Fatalf("start: exit %d, %q", r.Code, r.Stderr)
				}
			}
			b, err := os.ReadFile(logPath)
			if err != nil || bytes.Count(b, []byte{'\n'}) < 3 {
				t.Fatalf("audit log after three starts: %q, %v", b, err)
			}
			if err := os.WriteFile(logPath, c.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			r := runBin(t, env, "--root", root)
			if c.fatal != "" {
				wantFatal(t, r, c.fatal, "sweepd audit verify "+logPath)
				return
			}
			if r.Code != 0 || !strings.Contains(r.Stderr, "set aside") {
				t.Fatalf("start after a torn tail: exit %d, %q", r.Code, r.Stderr)
			}
			v := runBin(t, cleanEnv(t), "audit", "verify", logPath)
			if v.Code != 0 || !strings.HasPrefix(v.Stdout, "ok:") || !strings.Contains(v.Stdout, "recovered: line ") ||
				!strings.Contains(v.Stdout, "the sidecar is there and matches") {
				t.Fatalf("audit verify after recovery: exit %d, %q %q", v.Code, v.Stdout, v.Stderr)
			}
		})
	}
}
