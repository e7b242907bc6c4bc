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
		{"two files", []string{"a", "b"}},
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
