package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// committedMove is a journal holding one committed move_file of a.pdf to
// Documents/a.pdf (made on disk), as its records' lines.
func committedMove(t *testing.T, f *fixture) string {
	t.Helper()
	m := f.move(t, "a.pdf", "Documents/a.pdf")
	if err := os.Mkdir(filepath.Join(f.dir, "Documents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(f.dir, "a.pdf"), filepath.Join(f.dir, "Documents/a.pdf")); err != nil {
		t.Fatal(err)
	}
	info, _ := f.root.Lstat("Documents/a.pdf")
	m.State = jail.StateOf(info)
	var b strings.Builder
	for _, r := range []*record{{T: "state", Next: 1}, {T: "begin", ID: 1, Op: opDo, Tool: "move_file", Moves: []Move{m}}, {T: "commit", ID: 1, All: true}} {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	return b.String()
}

// TestDamagedTailIsSetAside: whatever a crash leaves after the last valid
// record (a torn line, garbage lines, zeros) is copied to a sidecar named
// after its SHA-256, the valid records are kept (the committed move can be
// undone), and the journal starts; a tail of blank lines needs no sidecar.
func TestDamagedTailIsSetAside(t *testing.T) {
	for _, c := range []struct {
		name, tail string
		lines      int
	}{
		{"torn last line", `{"t":"begin","id":2,"op":"do","to`, 1},
		{"garbage lines", "not json\n\x00\x01\x02\n{\"t\":\"nonsense\"}\n{\"t\":\"commit\"}\n", 4},
		{"zeros", strings.Repeat("\x00", 4096), 1},
		{"a record cut and a new one glued on", `{"t":"done","id":1,"i":[0{"t":"commit","id":1,"all":true}` + "\n", 1},
		{"blank lines only", "\n\n  \n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "a.pdf")
			valid := committedMove(t, f)
			os.MkdirAll(filepath.Dir(f.jp), 0o700)
			if err := os.WriteFile(f.jp, []byte(valid+c.tail), 0o600); err != nil {
				t.Fatal(err)
			}
			j, _ := f.open(t)
			tail := j.Tail()
			if c.lines == 0 {
				if tail != nil {
					t.Fatalf("set aside %+v, want nothing", tail)
				}
			} else {
				wantTail(t, f, tail, valid, c.tail, c.lines)
			}
			if _, err := j.Undo(nil); err != nil || !f.exists("a.pdf") {
				t.Fatalf("undo of the kept move: %v", err)
			}
			j.Close()
			j, _ = f.open(t)
			defer j.Close()
			if j.Tail() != nil {
				t.Fatalf("the rewritten journal has a damaged tail: %+v", j.Tail())
			}
			if _, r := j.Depth(); r != 1 {
				t.Fatalf("redo depth %d after restart, want 1", r)
			}
		})
	}
}

// wantTail checks what Open set aside: the sidecar holds exactly the tail,
// next to the journal, named and described by its hash.
func wantTail(t *testing.T, f *fixture, got *Tail, valid, tail string, lines int) {
	t.Helper()
	sum := sha256.Sum256([]byte(tail))
	want := Tail{Sidecar: f.jp + ".tail-" + hex.EncodeToString(sum[:]), Offset: int64(len(valid)),
		Bytes: int64(len(tail)), SHA256: hex.EncodeToString(sum[:]), Lines: lines}
	if got == nil || *got != want {
		t.Fatalf("set aside %+v, want %+v", got, want)
	}
	b, err := os.ReadFile(got.Sidecar)
	if err != nil || string(b) != tail {
		t.Fatalf("sidecar holds %q (%v), want %q", b, err, tail)
	}
	if fi, _ := os.Stat(got.Sidecar); fi.Mode().Perm() != 0o600 {
		t.Fatalf("sidecar mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestDamageInTheMiddleRefusesStart: an invalid line with valid records
// after it is not what a crash leaves, so Open refuses, names the line and
// sets nothing aside.
func TestDamageInTheMiddleRefusesStart(t *testing.T) {
	for _, c := range []struct {
		name, journal, line string
	}{
		{"garbage before a record", "{\"t\":\"state\",\"next\":1}\ngarbage\n{\"t\":\"state\",\"next\":1}\n", "line 2"},
		{"a torn record before a record", "{\"t\":\"state\",\"next\":1}\n{\"t\":\"beg\n\n{\"t\":\"state\",\"next\":1}\n", "line 2"},
		{"an unknown record type before a record", "{\"t\":\"state\",\"next\":1}\n{\"t\":\"x\"}\n{\"t\":\"commit\",\"id\":1}\n", "line 2"},
		{"a commit of an action never begun", "{\"t\":\"state\",\"next\":1}\n{\"t\":\"commit\",\"id\":7,\"all\":true}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			os.MkdirAll(filepath.Dir(f.jp), 0o700)
			os.WriteFile(f.jp, []byte(c.journal), 0o600)
			_, _, err := Open(f.jp, f.root, Options{})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.line) {
				t.Fatalf("err = %v, want ErrCorrupt naming %q", err, c.line)
			}
			if side, _ := filepath.Glob(f.jp + ".tail-*"); len(side) != 0 {
				t.Fatalf("set aside %v from a journal damaged in the middle", side)
			}
			if b, _ := os.ReadFile(f.jp); string(b) != c.journal {
				t.Fatal("the refused journal was changed")
			}
		})
	}
}

// TestInterruptedSetAsideRunsAgain: a start that set the tail aside and
// died before rewriting the journal finds the same tail next time and
// keeps the one sidecar it already made.
func TestInterruptedSetAsideRunsAgain(t *testing.T) {
	f := newFixture(t, "a.pdf")
	data := committedMove(t, f) + "garbage\n"
	os.MkdirAll(filepath.Dir(f.jp), 0o700)
	os.WriteFile(f.jp, []byte(data), 0o600)
	j, _ := f.open(t)
	first := j.Tail()
	j.Close()
	os.WriteFile(f.jp, []byte(data), 0o600) // as if the rewrite never landed
	j, _ = f.open(t)
	defer j.Close()
	if again := j.Tail(); again == nil || *again != *first {
		t.Fatalf("second start set aside %+v, first %+v", again, first)
	}
	if side, _ := filepath.Glob(f.jp + ".tail-*"); len(side) != 1 {
		t.Fatalf("sidecars %v, want one", side)
	}
}
