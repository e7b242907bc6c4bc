//go:build linux

package jail

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

func moveRoot(t *testing.T) (*Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, r.Path()
}

func stateOf(t *testing.T, r *Root, rel string) FileState {
	t.Helper()
	i, err := r.Lstat(rel)
	if err != nil {
		t.Fatal(err)
	}
	return StateOf(i)
}

func TestMoveNeverOverwritesAnExistingDestination(t *testing.T) {
	r, p := moveRoot(t)
	os.WriteFile(filepath.Join(p, "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(p, "b"), []byte("precious"), 0o644)
	m := r.NewMover()
	defer m.Close()
	err := m.Move("a", "b", stateOf(t, r, "a"))
	if !errors.Is(err, ErrOccupied) {
		t.Fatalf("err = %v, want ErrOccupied", err)
	}
	if b, _ := os.ReadFile(filepath.Join(p, "b")); string(b) != "precious" {
		t.Fatal("destination was overwritten")
	}
}

func TestMoveRefusesSourceSwappedForSymlink(t *testing.T) {
	r, p := moveRoot(t)
	os.WriteFile(filepath.Join(p, "a"), []byte("a"), 0o644)
	want := stateOf(t, r, "a")
	os.Remove(filepath.Join(p, "a"))
	os.Symlink("/etc/passwd", filepath.Join(p, "a"))
	m := r.NewMover()
	defer m.Close()
	if err := m.Move("a", "b", want); result.CodeOf(err) != result.PathEscape {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(p, "b")); err == nil {
		t.Fatal("symlink was moved")
	}
}

func TestMoveRefusesFileChangedSinceCheck(t *testing.T) {
	r, p := moveRoot(t)
	os.WriteFile(filepath.Join(p, "a"), []byte("a"), 0o644)
	want := stateOf(t, r, "a")
	os.WriteFile(filepath.Join(p, "a"), []byte("longer"), 0o644)
	m := r.NewMover()
	defer m.Close()
	if err := m.Move("a", "b", want); !errors.Is(err, ErrChanged) {
		t.Fatalf("err = %v", err)
	}
}

func TestMkdirAllRefusesSymlinkComponent(t *testing.T) {
	r, p := moveRoot(t)
	out := t.TempDir()
	os.Symlink(out, filepath.Join(p, "Docs"))
	if _, err := r.MkdirAll("Docs/sub"); err == nil {
		t.Fatal("MkdirAll went through a symlink")
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatal("created outside the root")
	}
	created, err := r.MkdirAll("A/B/C")
	if err != nil || len(created) != 3 || created[0] != "A" || created[2] != "A/B/C" {
		t.Fatalf("created %v, %v", created, err)
	}
}

func TestMoveAndRemoveEmptyDirRoundTrip(t *testing.T) {
	r, p := moveRoot(t)
	os.WriteFile(filepath.Join(p, "a.txt"), []byte("a"), 0o644)
	if _, err := r.MkdirAll("Docs"); err != nil {
		t.Fatal(err)
	}
	m := r.NewMover()
	defer m.Close()
	st := stateOf(t, r, "a.txt")
	if err := m.Move("a.txt", "Docs/a.txt", st); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveEmptyDir("Docs"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("non-empty dir: %v", err)
	}
	if err := m.Move("Docs/a.txt", "a.txt", st); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveEmptyDir("Docs"); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveLinkedNameKeepsTheLastName(t *testing.T) {
	r, p := moveRoot(t)
	os.WriteFile(filepath.Join(p, "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(p, "b"), []byte("a"), 0o644)
	id := stateOf(t, r, "a").ID
	if err := r.RemoveLinkedName("a", "b", id); err == nil {
		t.Fatal("removed a file that has no second name")
	}
	os.Remove(filepath.Join(p, "b"))
	os.Link(filepath.Join(p, "a"), filepath.Join(p, "b"))
	if err := r.RemoveLinkedName("a", "b", id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "b")); err != nil {
		t.Fatal("twin lost")
	}
}
