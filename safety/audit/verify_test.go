package audit

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// sampleLog writes n records (intents, outcomes, events) and returns the
// path and its lines.
func sampleLog(t *testing.T, n int) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	var id string
	for i := range n {
		var err error
		switch i % 3 {
		case 0:
			id, err = l.Intent("reclaim", map[string]any{"path": "/r/node_modules", "i": i})
		case 1:
			err = l.Outcome(id, "reclaim", result.OK, map[string]any{"bytes": 1000 + i})
		default:
			err = l.Event("tick", map[string]any{"i": i})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	return path, readLines(t, path)
}

func verifyLines(t *testing.T, lines [][]byte, trailingNewline bool) Report {
	t.Helper()
	b := bytes.Join(lines, []byte{'\n'})
	if trailingNewline {
		b = append(b, '\n')
	}
	rep, err := Verify(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func wantBroken(t *testing.T, rep Report, line int, reasonPart string) {
	t.Helper()
	if rep.OK || rep.BrokenAt != line || !strings.Contains(rep.Reason, reasonPart) {
		t.Fatalf("report %+v, want broken at line %d with %q", rep, line, reasonPart)
	}
	if rep.Records != line-1 {
		t.Fatalf("Records = %d, want the %d intact records before line %d", rep.Records, line-1, line)
	}
}

func TestVerifyFindsEditedRecord(t *testing.T) {
	_, lines := sampleLog(t, 20)
	// The attacker rewrites what was deleted, keeping the JSON valid.
	orig := lines[3]
	lines[3] = bytes.Replace(lines[3], []byte("node_modules"), []byte("node_modulez"), 1)
	if bytes.Equal(lines[3], orig) {
		t.Fatal("edit did not change the line")
	}
	wantBroken(t, verifyLines(t, lines, true), 5, "hash of line 4")

	// Editing a record and fixing its successor's prev moves the break one on.
	_, lines = sampleLog(t, 20)
	lines[4] = bytes.Replace(lines[4], []byte(`"reclaim"`), []byte(`"reclain"`), 1)
	lines[5] = bytes.Replace(lines[5], []byte(decodeLine(t, lines[5]).Prev), []byte(hashLine(lines[4])), 1)
	wantBroken(t, verifyLines(t, lines, true), 7, "hash of line 6")

	// Editing the seq itself is caught on that line.
	_, lines = sampleLog(t, 20)
	lines[9] = bytes.Replace(lines[9], []byte(`"seq":10,`), []byte(`"seq":11,`), 1)
	wantBroken(t, verifyLines(t, lines, true), 10, "seq 11 does not follow seq 9")
}

func TestVerifyFindsDeletedRecord(t *testing.T) {
	_, lines := sampleLog(t, 20)
	lines = append(lines[:6:6], lines[7:]...) // remove line 7
	wantBroken(t, verifyLines(t, lines, true), 7, "seq 8 does not follow seq 6")

	// Renumbering after the deletion does not hide it: prev still breaks.
	_, lines = sampleLog(t, 20)
	lines = append(lines[:6:6], lines[7:]...)
	lines[6] = bytes.Replace(lines[6], []byte(`"seq":8,`), []byte(`"seq":7,`), 1)
	wantBroken(t, verifyLines(t, lines, true), 7, "prev does not match the hash of line 6")

	// Deleting the first record leaves a file that claims to continue a
	// rotated one; VerifyFile then looks for that file.
	path, lines := sampleLog(t, 5)
	writeLines(t, path, lines[1:])
	rep := mustVerify(t, path, 4)
	if rep.Note == "" || rep.FirstSeq != 2 {
		t.Fatalf("a file that starts mid-chain must say so: %+v", rep)
	}
}

func TestVerifyFindsReorderedRecords(t *testing.T) {
	_, lines := sampleLog(t, 20)
	lines[7], lines[8] = lines[8], lines[7]
	wantBroken(t, verifyLines(t, lines, true), 8, "seq 9 does not follow seq 7")
}

func TestVerifyFindsTruncatedTail(t *testing.T) {
	_, lines := sampleLog(t, 20)
	b := bytes.Join(lines, []byte{'\n'})
	b = append(b, '\n')
	cases := []struct {
		name string
		cut  int
	}{
		{"newline cut", 1},
		{"newline and one byte cut", 2},
		{"ten bytes cut", 10},
		{"all of the last record but its first byte cut", len(lines[19])},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Verify(bytes.NewReader(b[:len(b)-c.cut]))
			if err != nil {
				t.Fatal(err)
			}
			wantBroken(t, rep, 20, "incomplete record")
		})
	}
	// Cut at a line boundary the chain is intact but shorter: the head moves.
	full := verifyLines(t, lines, true)
	short := verifyLines(t, lines[:19], true)
	if !short.OK || short.Records != 19 || short.Head == full.Head || short.LastSeq != 19 {
		t.Fatalf("short %+v vs full %+v", short, full)
	}
}

func TestVerifyFindsMalformedLines(t *testing.T) {
	_, good := sampleLog(t, 6)
	mutate := func(i int, f func([]byte) []byte) [][]byte {
		lines := make([][]byte, len(good))
		copy(lines, good)
		lines[i] = f(append([]byte(nil), lines[i]...))
		return lines
	}
	cases := []struct {
		name   string
		lines  [][]byte
		at     int
		reason string
	}{
		{"not JSON", mutate(2, func([]byte) []byte { return []byte("hello") }), 3, "not a JSON object"},
		{"bad JSON", mutate(2, func(b []byte) []byte { return b[:len(b)-1] }), 3, "not valid JSON"},
		{"empty line", mutate(2, func([]byte) []byte { return nil }), 3, "empty"},
		{"quoted seq", mutate(2, func(b []byte) []byte { return bytes.Replace(b, []byte(`"seq":3`), []byte(`"seq":"3"`), 1) }), 3, "seq"},
		{"upper-case prev", mutate(2, func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"prev":"`)) + len(`"prev":"`)
			copy(b[i:], bytes.ToUpper(b[i:i+64]))
			return b
		}), 3, "lowercase hex"},
		{"unknown kind", mutate(2, func(b []byte) []byte { return bytes.Replace(b, []byte(`"event"`), []byte(`"evnt"`), 1) }), 3, "kind"},
		{"outcome without code", mutate(1, func(b []byte) []byte { return bytes.Replace(b, []byte(`"code":"OK",`), nil, 1) }), 2, "lacks"},
		{"bad time", mutate(2, func(b []byte) []byte { return bytes.Replace(b, []byte(`"time":"`), []byte(`"time":"x`), 1) }), 3, "time"},
		{"first record not genesis but seq 1", mutate(0, func(b []byte) []byte {
			return bytes.Replace(b, []byte(GenesisPrev), []byte(strings.Repeat("ab", 32)), 1)
		}), 1, "only seq 1 may start a chain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantBroken(t, verifyLines(t, c.lines, true), c.at, c.reason)
		})
	}
}

func TestVerifyAcceptsEmptyLog(t *testing.T) {
	rep, err := Verify(strings.NewReader(""))
	if err != nil || !rep.OK || rep.Records != 0 || rep.BrokenAt != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
}

func TestVerifyFileChecksLinkToRotatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path, MaxBytes: 1500})
	for i := range 30 {
		if err := l.Event("tick", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	old := readLines(t, path+".1")
	mustVerify(t, path, len(readLines(t, path)))

	// The older file's last record is edited: the newer file no longer
	// continues it.
	edited := append([][]byte(nil), old...)
	edited[len(edited)-1] = bytes.Replace(edited[len(edited)-1], []byte(`"tick"`), []byte(`"tock"`), 1)
	writeLines(t, path+".1", edited)
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantBroken(t, rep, 1, "does not match the hash of the last record of "+path+".1")

	// The older file lost its last record: seq and hash both disagree.
	writeLines(t, path+".1", old[:len(old)-1])
	rep, _ = VerifyFile(path)
	wantBroken(t, rep, 1, path+".1")
	writeLines(t, path+".1", old)
	mustVerify(t, path, len(readLines(t, path)))
}

func TestPredecessorNames(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"current file", "/s/audit.jsonl", "/s/audit.jsonl.1"},
		{"first rotated", "/s/audit.jsonl.1", "/s/audit.jsonl.2"},
		{"fourth rotated", "/s/audit.jsonl.4", "/s/audit.jsonl.5"},
		{"two digits", "/s/audit.jsonl.10", "/s/audit.jsonl.11"},
		{"dot zero is not a rotation", "/s/audit.jsonl.0", "/s/audit.jsonl.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := predecessorOf(c.in); got != c.want {
				t.Errorf("predecessorOf(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-11-30T12:00:00Z","kind":"event","server":"s","action":"a","fields":{},"prev":"` + GenesisPrev + `"}` + "\n"))
	f.Add([]byte("garbage\n"))
	f.Add([]byte("\x00\x00\n{}\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := Verify(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK != (rep.BrokenAt == 0) || (rep.OK && rep.Reason != "") {
			t.Fatalf("inconsistent report %+v", rep)
		}
		if rep.OK && len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("a log without a final newline verified: %+v", rep)
		}
		if (rep.OK && (rep.Torn || rep.ValidBytes != int64(len(b)))) || rep.ValidBytes > int64(len(b)) {
			t.Fatalf("report %+v for %d bytes", rep, len(b))
		}
		// The intact part verifies on its own, with the same records.
		whole, err := Verify(bytes.NewReader(b[:rep.ValidBytes]))
		if err != nil || !whole.OK || whole.Records != rep.Records || whole.Head != rep.Head {
			t.Fatalf("the intact part %+v does not match %+v", whole, rep)
		}
	})
}
