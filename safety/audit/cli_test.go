package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runVerify(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := RunVerifyCommand(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunVerifyCommand(t *testing.T) {
	path, lines := sampleLog(t, 12)

	code, out, _ := runVerify(path)
	if code != 0 || !strings.HasPrefix(out, "ok: 12 records, chain intact\n") {
		t.Fatalf("intact log: exit %d, %q", code, out)
	}
	if code, out, _ := runVerify("--", path); code != 0 || !strings.HasPrefix(out, "ok: 12 records") {
		t.Fatalf("with --: exit %d, %q", code, out)
	}

	lines[3], lines[4] = lines[4], lines[3]
	writeLines(t, path, lines)
	code, out, _ = runVerify(path)
	if code != 1 || !strings.HasPrefix(out, "broken: line 4: seq 5 does not follow seq 3") {
		t.Fatalf("reordered log: exit %d, %q", code, out)
	}

	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	if code, out, _ := runVerify(empty); code != 0 || out != "ok: 0 records, chain intact\n" {
		t.Fatalf("empty log: exit %d, %q", code, out)
	}

	usage := []struct {
		name string
		args []string
	}{
		{"nil", nil},
		{"no arguments", []string{}},
		{"a flag after a file", []string{"a", "-x"}},
		{"unknown flag", []string{"-x"}},
		{"empty file name", []string{""}},
		{"only --", []string{"--"}},
		{"empty name after --", []string{"--", ""}},
	}
	for _, c := range usage {
		t.Run("usage for "+c.name, func(t *testing.T) {
			code, out, errOut := runVerify(c.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, "usage: ") || !strings.Contains(errOut, "audit verify FILE") {
				t.Fatalf("args %q: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
			}
		})
	}
	if code, out, _ := runVerify("--help"); code != 0 || !strings.Contains(out, "usage: ") {
		t.Fatalf("--help: exit %d, %q", code, out)
	}
	code, out, errOut := runVerify(filepath.Join(t.TempDir(), "missing.jsonl"))
	if code != 2 || out != "" || !strings.Contains(errOut, "cannot read") {
		t.Fatalf("missing file: exit %d, %q, %q", code, out, errOut)
	}
}

func TestRunVerifyCommandTornAndRecovered(t *testing.T) {
	path, b := logWith(t, 3)
	os.WriteFile(path, append(append([]byte(nil), b...), `{"seq":4,"ti`...), 0o600)
	code, out, _ := runVerify(path)
	if code != 1 || !strings.HasPrefix(out, "torn: line 4: ") || !strings.Contains(out, "3 records before it are intact") {
		t.Fatalf("torn log: exit %d, %q", code, out)
	}
	openLog(t, Options{Path: path}).Close()
	side := sidecars(t, path)[0]
	cases := []struct {
		name  string
		setup func()
		want  string
	}{
		{"sidecar in place", func() {}, "the sidecar is there and matches"},
		{"sidecar edited", func() { os.WriteFile(side, []byte("other"), 0o600) }, "the sidecar differs"},
		{"sidecar removed", func() { os.Remove(side) }, "the sidecar is no longer there"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.setup()
			code, out, _ := runVerify(path)
			if code != 0 || !strings.HasPrefix(out, "ok: 4 records, chain intact\n") ||
				!strings.Contains(out, "recovered: line 4 (seq 4): a torn tail of 12 bytes was set aside in "+filepath.Base(side)) ||
				!strings.Contains(out, c.want) {
				t.Fatalf("exit %d, %q; want a recovery with %q", code, out, c.want)
			}
		})
	}
}

func TestRunVerifyCommandRotatedSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path, MaxBytes: 1200, Keep: 3})
	for i := range 40 {
		if err := l.Event("tick", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Fatal("Keep 3 left a fourth rotated file")
	}
	all := []string{path + ".2", path, path + ".3", path + ".1"}
	cases := []struct {
		name  string
		files []string
		edit  func()
		code  int
		want  string
	}{
		{"all files in any order", all, func() {}, 0, "ok: "},
		{"without the older files", []string{path, path + ".1"}, func() {}, 0, "continues a chain from a file not given"},
		{"a file missing in the middle", []string{path, path + ".2"}, func() {}, 1, "a file of the set is missing"},
		{"a rotated file edited at its end", all, func() {
			lines := readLines(t, path+".2")
			lines[len(lines)-1] = bytes.Replace(lines[len(lines)-1], []byte(`"tick"`), []byte(`"tock"`), 1)
			writeLines(t, path+".2", lines)
		}, 1, path + ".1: broken: line 1: prev does not match the hash of the last record of " + path + ".2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.edit()
			code, out, _ := runVerify(c.files...)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, %q; want %d with %q", code, out, c.code, c.want)
			}
		})
	}
}
