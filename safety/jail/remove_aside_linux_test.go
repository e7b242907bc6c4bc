//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// asideProject writes root/proj with a package.json beside a node_modules
// of two files, and returns the guard that reclaims it aside.
func asideProject(t *testing.T, root string) Guard {
	t.Helper()
	writeFile(t, filepath.Join(root, "proj", "package.json"), "{}")
	writeFile(t, filepath.Join(root, "proj", "node_modules", "a", "index.js"), "1")
	writeFile(t, filepath.Join(root, "proj", "node_modules", "b.js"), "2")
	return Guard{Want: identityOf(t, filepath.Join(root, "proj", "node_modules")), Markers: []string{"package.json"}, Aside: AsidePrefix + "t1"}
}

// asidesIn lists the set-aside names in root's top directory.
func asidesIn(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if IsAside(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestRemoveTreeAsideDeletesAndLeavesNoName(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "root")
		g := asideProject(t, root)
		var during []string
		g.Intent = func() error { during = asidesIn(t, root); return nil }
		u, err := openRoot(t, root).RemoveTree("proj/node_modules", g)
		if err != nil {
			t.Fatalf("RemoveTree: %v", err)
		}
		if exists(filepath.Join(root, "proj", "node_modules")) || len(asidesIn(t, root)) != 0 || len(during) != 0 {
			t.Fatalf("left behind: node_modules %v, set aside %v (before the intent: %v)",
				exists(filepath.Join(root, "proj", "node_modules")), asidesIn(t, root), during)
		}
		if u.Files != 2 || u.Dirs != 2 {
			t.Fatalf("Usage = %+v, want 2 files and 2 dirs", u)
		}
		if !exists(filepath.Join(root, "proj", "package.json")) {
			t.Fatal("the project's marker was deleted")
		}
	})
}

func TestRemoveTreeRefusesBadAsideName(t *testing.T) {
	for _, c := range []struct{ name, aside string }{
		{"no prefix", "junk"}, {"prefix alone", AsidePrefix}, {"a slash", AsidePrefix + "a/b"},
		{"dot-dot", AsidePrefix + "../x"}, {"a control character", AsidePrefix + "a\x01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			g := asideProject(t, root)
			g.Aside = c.aside
			called := false
			g.Intent = func() error { called = true; return nil }
			_, err := openRoot(t, root).RemoveTree("proj/node_modules", g)
			wantCode(t, "RemoveTree", err, result.InternalError)
			if called || !exists(filepath.Join(root, "proj", "node_modules", "b.js")) {
				t.Fatalf("a bad aside name got as far as the intent (%v) or a deletion", called)
			}
		})
	}
}

// TestRemoveTreeAsideRefusesSwap: the name is swapped between the check and
// the rename (here from the intent hook) for a symlink to a canary or for
// another directory: what the rename took is put back, the deletion is
// refused as STALE, and nothing outside is touched.
func TestRemoveTreeAsideRefusesSwap(t *testing.T) {
	for _, c := range []struct {
		name string
		swap func(t *testing.T, nm, canary string)
	}{
		{"symlink", func(t *testing.T, nm, canary string) { symlink(t, canary, nm) }},
		{"other directory", func(t *testing.T, nm, _ string) { writeFile(t, filepath.Join(nm, "mine.txt"), "mine") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			root := filepath.Join(tmp, "root")
			cy := newCanary(t, filepath.Join(tmp, "canary"), 3)
			g := asideProject(t, root)
			nm := filepath.Join(root, "proj", "node_modules")
			g.Intent = func() error {
				must(t, os.Rename(nm, nm+".real"))
				c.swap(t, nm, cy.dir)
				return nil
			}
			_, err := openRoot(t, root).RemoveTree("proj/node_modules", g)
			wantCode(t, "RemoveTree", err, result.Stale)
			cy.check(t)
			if _, err := os.Lstat(nm); err != nil || len(asidesIn(t, root)) != 0 {
				t.Fatalf("the swapped-in object was not put back (%v), set aside: %v", err, asidesIn(t, root))
			}
			if c.name == "other directory" && !exists(filepath.Join(nm, "mine.txt")) {
				t.Fatal("the swapped-in directory lost its file")
			}
		})
	}
}

// TestRemoveTreeAsidePutsBackWhatItCannotDelete: a mount inside the find
// stops the deletion; what is left goes back to its path (listed and
// reported as before), not under the aside name.
func TestRemoveTreeAsidePutsBackWhatItCannotDelete(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	g := asideProject(t, root)
	mkdirAll(t, filepath.Join(root, "proj", "node_modules", "mnt"))
	mountTmpfs(t, filepath.Join(root, "proj", "node_modules", "mnt"))
	writeFile(t, filepath.Join(root, "proj", "node_modules", "mnt", "precious"), "keep")
	if _, err := openRoot(t, root).RemoveTree("proj/node_modules", g); err == nil {
		t.Fatal("RemoveTree reported success with a mount point inside")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proj", "node_modules", "mnt", "precious")); string(b) != "keep" || len(asidesIn(t, root)) != 0 {
		t.Fatalf("the remnant is not back at its path: %q, set aside %v", b, asidesIn(t, root))
	}
}

// TestFinishAsideDeletesOnlySetAsideDirectories: what a crash left set
// aside is deleted; a symlink or a file of such a name, another name, and
// what a symlink inside points to are left alone.
func TestFinishAsideDeletesOnlySetAsideDirectories(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		cy := newCanary(t, filepath.Join(tmp, "canary"), 3)
		writeFile(t, filepath.Join(root, AsidePrefix+"r-1", "a", "b", "f"), "half")
		symlink(t, cy.dir, filepath.Join(root, AsidePrefix+"r-1", "out"))
		mkdirAll(t, filepath.Join(root, AsidePrefix+"r-2"))
		symlink(t, cy.dir, filepath.Join(root, AsidePrefix+"link"))
		writeFile(t, filepath.Join(root, AsidePrefix+"file"), "a file")
		writeFile(t, filepath.Join(root, "proj", AsidePrefix+"deep", "f"), "not top level")
		names, u, err := openRoot(t, root).FinishAside()
		if err != nil {
			t.Fatalf("FinishAside: %v", err)
		}
		slices.Sort(names)
		if want := []string{AsidePrefix + "r-1", AsidePrefix + "r-2"}; !slices.Equal(names, want) {
			t.Fatalf("finished %v, want %v", names, want)
		}
		if u.Files != 2 || u.Dirs != 4 {
			t.Fatalf("Usage = %+v, want 2 files (one a symlink) and 4 dirs", u)
		}
		cy.check(t)
		for _, p := range []string{AsidePrefix + "link", AsidePrefix + "file", "proj/" + AsidePrefix + "deep/f"} {
			if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s was removed: %v", p, err)
			}
		}
	})
}
