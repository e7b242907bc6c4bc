package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

type fixture struct {
	root *jail.Root
	dir  string
	jp   string
}

func newFixture(t *testing.T, files ...string) *fixture {
	t.Helper()
	ws := t.TempDir()
	for _, f := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, f), []byte("content of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := jail.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &fixture{root: r, dir: r.Path(), jp: filepath.Join(t.TempDir(), "state", "j.journal")}
}

func (f *fixture) open(t *testing.T) (*Journal, []Recovered) {
	t.Helper()
	j, rec, err := Open(f.jp, f.root, Options{BatchMoves: 3})
	if err != nil {
		t.Fatal(err)
	}
	return j, rec
}

func (f *fixture) move(t *testing.T, src, dst string) Move {
	t.Helper()
	i, err := f.root.Lstat(src)
	if err != nil {
		t.Fatal(err)
	}
	return Move{Src: src, Dst: dst, State: jail.StateOf(i)}
}

func (f *fixture) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(f.dir, rel))
	return err == nil
}

func TestUndoRedoRoundTripSurvivesRestart(t *testing.T) {
	f := newFixture(t, "a.pdf", "b.jpg")
	j, _ := f.open(t)
	out, err := j.Do("apply_plan", "", []Move{f.move(t, "a.pdf", "Documents/a.pdf"), f.move(t, "b.jpg", "Images/b.jpg")}, nil)
	if err != nil || len(out.Action.Moves) != 2 {
		t.Fatalf("do: %v %+v", err, out)
	}
	j.Close()
	j, _ = f.open(t)
	if _, err := j.Undo(nil); err != nil {
		t.Fatal(err)
	}
	if !f.exists("a.pdf") || !f.exists("b.jpg") || f.exists("Documents") || f.exists("Images") {
		t.Fatal("undo did not restore the tree (created folders must go too)")
	}
	j.Close()
	j, _ = f.open(t)
	defer j.Close()
	if _, err := j.Redo(nil); err != nil {
		t.Fatal(err)
	}
	if !f.exists("Documents/a.pdf") || f.exists("a.pdf") {
		t.Fatal("redo did not re-apply")
	}
}

func TestNewWorkClearsRedo(t *testing.T) {
	f := newFixture(t, "a.pdf", "c.txt")
	j, _ := f.open(t)
	defer j.Close()
	j.Do("move_file", "", []Move{f.move(t, "a.pdf", "x.pdf")}, nil)
	j.Undo(nil)
	if _, r := j.Depth(); r != 1 {
		t.Fatal("redo stack empty after undo")
	}
	j.Do("move_file", "", []Move{f.move(t, "c.txt", "d.txt")}, nil)
	if _, err := j.Redo(nil); err != ErrNothingToRedo {
		t.Fatalf("redo after new work: %v", err)
	}
}

func TestUndoRefusesOccupiedOriginalAndChangedFile(t *testing.T) {
	f := newFixture(t, "a.pdf", "b.pdf")
	j, _ := f.open(t)
	defer j.Close()
	j.Do("apply_plan", "", []Move{f.move(t, "a.pdf", "D/a.pdf"), f.move(t, "b.pdf", "D/b.pdf")}, nil)
	os.WriteFile(filepath.Join(f.dir, "a.pdf"), []byte("newcomer"), 0o644)
	os.WriteFile(filepath.Join(f.dir, "D/b.pdf"), []byte("edited since"), 0o644)
	out, err := j.Undo(nil)
	if result.CodeOf(err) != result.Stale || len(out.Failed) != 2 {
		t.Fatalf("err %v, failed %+v", err, out.Failed)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "a.pdf")); string(b) != "newcomer" || !f.exists("D/a.pdf") {
		t.Fatal("a refused undo moved something")
	}
}

func TestRefusesWholeActionWhenOneSourceChanged(t *testing.T) {
	f := newFixture(t, "a.pdf", "b.pdf")
	j, _ := f.open(t)
	defer j.Close()
	ms := []Move{f.move(t, "a.pdf", "D/a.pdf"), f.move(t, "b.pdf", "D/b.pdf")}
	os.Remove(filepath.Join(f.dir, "b.pdf"))
	os.Symlink("/etc/passwd", filepath.Join(f.dir, "b.pdf"))
	out, err := j.Do("apply_plan", "", ms, nil)
	if err == nil || len(out.Failed) != 1 || f.exists("D") {
		t.Fatalf("err %v failed %+v; D exists %v", err, out.Failed, f.exists("D"))
	}
}

func TestRecoveryCompletesInterruptedActionByIdentity(t *testing.T) {
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("f%d.txt", i))
	}
	f := newFixture(t, names...)
	var ms []Move
	for _, n := range names {
		ms = append(ms, f.move(t, n, "Docs/"+n))
	}
	// A crash after the begin record and four moves, before any done record.
	os.MkdirAll(filepath.Dir(f.jp), 0o700)
	b, _ := json.Marshal(&record{T: "begin", ID: 1, Op: opDo, Tool: "apply_plan", Moves: ms, Mkdirs: []string{"Docs"}})
	os.WriteFile(f.jp, append(b, []byte("\n{\"t\":\"do")...), 0o600) // plus a torn line
	os.Mkdir(filepath.Join(f.dir, "Docs"), 0o755)
	for _, n := range names[:4] {
		os.Rename(filepath.Join(f.dir, n), filepath.Join(f.dir, "Docs", n))
	}
	// One interrupted link+unlink: both names.
	os.Link(filepath.Join(f.dir, names[4]), filepath.Join(f.dir, "Docs", names[4]))
	// One vanished.
	os.Remove(filepath.Join(f.dir, names[9]))
	j, rec := f.open(t)
	if len(rec) != 1 || rec[0].Completed != 9 || rec[0].Dropped != 1 {
		t.Fatalf("recovered %+v", rec)
	}
	for _, n := range names[:9] {
		if f.exists(n) || !f.exists("Docs/"+n) {
			t.Fatalf("%s not in exactly one place", n)
		}
	}
	if _, err := j.Undo(nil); err != nil {
		t.Fatal(err)
	}
	j.Close()
	for _, n := range names[:9] {
		if !f.exists(n) || f.exists("Docs/"+n) {
			t.Fatalf("%s not restored", n)
		}
	}
	if f.exists("Docs") {
		t.Fatal("created folder left behind")
	}
}

func TestCorruptMiddleLineRefusesStart(t *testing.T) {
	f := newFixture(t)
	os.MkdirAll(filepath.Dir(f.jp), 0o700)
	os.WriteFile(f.jp, []byte("garbage\n{\"t\":\"state\"}\n"), 0o600)
	if _, _, err := Open(f.jp, f.root, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
}

func TestSecondProcessOnSameJournalIsRefused(t *testing.T) {
	f := newFixture(t)
	j, _ := f.open(t)
	defer j.Close()
	if _, _, err := Open(f.jp, f.root, Options{}); err != ErrBusy {
		t.Fatalf("err = %v", err)
	}
}

func TestMoveOntoExistingDestinationIsRefused(t *testing.T) {
	f := newFixture(t, "a.pdf", "b.pdf")
	j, _ := f.open(t)
	defer j.Close()
	_, err := j.Do("move_file", "", []Move{f.move(t, "a.pdf", "b.pdf")}, nil)
	if result.CodeOf(err) != result.PolicyDenied {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "b.pdf")); string(b) != "content of b.pdf" {
		t.Fatal("overwritten")
	}
}
