package protect

import (
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// plantEach plants, one after another on a tree a Set already knows, each
// protected path a command could leave (deep in the tree, in a directory
// renamed into place, in a new repository's hooks, in .git/config's
// place), and checks that the scan right after it (no pause: the same
// clock tick as the change) sees it.
func plantEach(t *testing.T, set *Set, dir string) {
	t.Helper()
	for _, c := range []struct {
		name  string
		plant func()
		want  string
	}{
		{"deep new file", func() { mk(t, dir, map[string]string{"a/b/c/d/.envrc": "planted"}) }, "a/b/c/d/.envrc"},
		{"directory renamed into place", func() {
			mk(t, dir, map[string]string{"staging/.vscode/tasks.json": "{}"})
			if err := os.Rename(filepath.Join(dir, "staging"), filepath.Join(dir, "e/f/moved")); err != nil {
				t.Fatal(err)
			}
		}, "e/f/moved/.vscode"},
		{"new hook", func() { mk(t, dir, map[string]string{"repo/.git/hooks/pre-commit": "#!/bin/sh\n"}) }, "repo/.git/hooks/pre-commit"},
		{"hooksPath set in place", func() {
			f, err := os.OpenFile(filepath.Join(dir, "repo/.git/config"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "[core]\n\thooksPath = ../tools/hooks\n")
			f.Close()
		}, "tools/hooks/post-checkout"},
	} {
		c.plant()
		snap := scanOf(t, set, dir, false)
		if _, ok := snap.Paths[c.want]; !ok {
			t.Errorf("%s: %s not seen", c.name, c.want)
		}
	}
}

func plantTree(t *testing.T) string {
	dir := t.TempDir()
	mk(t, dir, map[string]string{"a/b/c/d/file": "x", "e/f/file": "x", "repo/.git/config": "[core]\n", "repo/.git/hooks/x.sample": "x",
		"tools/hooks/post-checkout": "#!/bin/sh\n"})
	for i := 0; i < 200; i++ {
		mk(t, dir, map[string]string{fmt.Sprintf("src/p%d/q/file", i): "x"})
	}
	return dir
}

// TestWatchedTreeSeesEveryChangeAtOnce: with the watcher, a scan with
// nothing changed lists no directory and stats none (it reuses the last
// walk), and every planted path is seen by the very next scan, even in
// the clock tick of the change (the change time alone could miss it).
func TestWatchedTreeSeesEveryChangeAtOnce(t *testing.T) {
	dir := plantTree(t)
	set := Default()
	scanOf(t, set, dir, false)
	tc := treeOf(t, set)
	if tc.watch == nil || tc.unwatched != 0 || !tc.complete {
		t.Fatalf("no complete watched walk: watcher %v, %d unwatched, complete %v", tc.watch != nil, tc.unwatched, tc.complete)
	}
	if snap := scanOf(t, set, dir, false); snap.Dirs != 0 {
		t.Errorf("a scan with nothing changed listed %d directories", snap.Dirs)
	}
	plantEach(t, set, dir)
}

// TestUnwatchedDirectoriesAreStatted: past the watches a tree may take,
// the directories without one are stat'ed at every scan (no scan reuses
// a walk then), and every planted path is still seen.
func TestUnwatchedDirectoriesAreStatted(t *testing.T) {
	saved := maxWatches
	maxWatches = func() int { return 3 }
	defer func() { maxWatches = saved }()
	dir := plantTree(t)
	set := Default()
	scanOf(t, set, dir, false)
	if tc := treeOf(t, set); tc.unwatched == 0 {
		t.Fatal("every directory watched despite the cap")
	}
	plantEach(t, set, dir)
}

// TestLostEventsHaveEveryDirectoryStatted: when the watcher's queue
// overflows (more changes than the kernel queues between two scans), the
// next scan stats every directory and still sees a path planted among
// the flood.
func TestLostEventsHaveEveryDirectoryStatted(t *testing.T) {
	dir := plantTree(t)
	set := Default()
	scanOf(t, set, dir, false)
	// More events than fs.inotify.max_queued_events (16384 by default):
	// each file made and removed queues two.
	flood := filepath.Join(dir, "src/p7/q")
	n := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		fmt.Sscan(string(b), &n)
	}
	for i := 0; i <= n/2+1; i++ {
		p := filepath.Join(flood, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	mk(t, dir, map[string]string{"src/p150/q/.mcp.json": "{}"})
	tc := treeOf(t, set)
	changed := tc.watch.drain()
	if !tc.watch.lost {
		t.Fatalf("no overflow seen after %d changes (%d directories named)", n+2, len(changed))
	}
	// What the drain above took is what a scan would have: put it back as
	// the scan would find it, lost.
	snap := scanOf(t, set, dir, false)
	if _, ok := snap.Paths["src/p150/q/.mcp.json"]; !ok {
		t.Error("a path planted among the flood was not seen")
	}
}

// treeOf returns the Set's memory of its only tree.
func treeOf(t *testing.T, set *Set) *treeCache {
	t.Helper()
	set.mu.Lock()
	defer set.mu.Unlock()
	if len(set.trees) != 1 {
		t.Fatalf("%d trees remembered", len(set.trees))
	}
	for _, tc := range set.trees {
		return tc
	}
	return nil
}

// TestRememberedScanMatchesAFreshOne changes a tree at random between
// scans (directories made, removed, renamed into other places and
// replaced by links; protected files and directories planted and
// removed; a repository made) and checks after each change that the scan
// of a Set that remembers and watches the tree finds exactly the
// protected paths a Set that never saw the tree finds.
func TestRememberedScanMatchesAFreshOne(t *testing.T) {
	dir := plantTree(t)
	set := Default()
	scanOf(t, set, dir, false)
	rng := rand.New(rand.NewPCG(19, 5))
	var dirs []string
	refresh := func() {
		dirs = dirs[:0]
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != dir {
				rel, _ := filepath.Rel(dir, p)
				dirs = append(dirs, rel)
			}
			return nil
		})
	}
	protected := []string{".envrc", ".mcp.json", ".vscode/tasks.json", ".git/config", ".git/hooks/pre-commit", ".claude/settings.json", "lefthook.yml"}
	for step := 0; step < 150; step++ {
		refresh()
		pick := func() string {
			if len(dirs) == 0 {
				return "."
			}
			return dirs[rng.IntN(len(dirs))]
		}
		var what string
		switch rng.IntN(9) {
		case 0, 1:
			d := filepath.Join(pick(), fmt.Sprintf("n%d", step))
			what = "mkdir " + d
			_ = os.MkdirAll(filepath.Join(dir, d, "inner"), 0o755)
		case 2:
			d := pick()
			what = "remove " + d
			_ = os.RemoveAll(filepath.Join(dir, d))
		case 3:
			from, to := pick(), pick()
			what = "rename " + from + " into " + to
			_ = os.Rename(filepath.Join(dir, from), filepath.Join(dir, to, fmt.Sprintf("r%d", step)))
		case 4:
			p := filepath.Join(pick(), protected[rng.IntN(len(protected))])
			what = "plant " + p
			_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
			_ = os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
		case 5:
			d := pick()
			what = "replace by a link " + d
			if os.RemoveAll(filepath.Join(dir, d)) == nil {
				_ = os.Symlink("/tmp", filepath.Join(dir, d))
			}
		case 6:
			p := filepath.Join(pick(), protected[rng.IntN(len(protected))])
			what = "remove protected " + p
			_ = os.RemoveAll(filepath.Join(dir, p))
		case 8:
			// A directory removed and made again under the same name,
			// with a protected file in it: another inode, never watched.
			d := pick()
			what = "remade " + d
			if os.RemoveAll(filepath.Join(dir, d)) == nil {
				_ = os.MkdirAll(filepath.Join(dir, d), 0o755)
				_ = os.WriteFile(filepath.Join(dir, d, ".envrc"), []byte("x"), 0o644)
			}
		case 7:
			// core.hooksPath set, in place, to a directory the tree
			// already holds (its files become protected).
			d := pick()
			what = "hooksPath " + d
			_ = os.MkdirAll(filepath.Join(dir, "repo/.git"), 0o755)
			_ = os.WriteFile(filepath.Join(dir, "repo/.git/config"), []byte("[core]\n\thooksPath = ../"+d+"\n"), 0o644)
		}
		got := scanOf(t, set, dir, false)
		fresh := Default()
		want := scanOf(t, fresh, dir, false)
		// And it remembers the directories a fresh walk remembers, no
		// more (a directory removed is forgotten with what was beneath).
		gotDirs, wantDirs := slices.Sorted(maps.Keys(treeOf(t, set).dirs)), slices.Sorted(maps.Keys(treeOf(t, fresh).dirs))
		fresh.Close()
		if !slices.Equal(gotDirs, wantDirs) {
			t.Fatalf("step %d (%s): remembers %d directories, a fresh walk %d", step, what, len(gotDirs), len(wantDirs))
		}
		var missing, extra []string
		for p := range want.Paths {
			if _, ok := got.Paths[p]; !ok {
				missing = append(missing, p)
			}
		}
		for p := range got.Paths {
			if _, ok := want.Paths[p]; !ok {
				extra = append(extra, p)
			}
		}
		if len(missing)+len(extra) > 0 {
			t.Fatalf("step %d (%s): the remembered scan misses %v and has %v beyond a fresh scan", step, what, missing, extra)
		}
	}
}

// TestPatchVisitsOnlyWhatChanged: after a change, the scan of a watched
// tree visits the changed directories and what appeared beneath them,
// not the whole tree, whether an entry was made, a directory with
// subdirectories removed, or one renamed elsewhere; and it finds what a
// fresh scan finds.
func TestPatchVisitsOnlyWhatChanged(t *testing.T) {
	dir := plantTree(t) // 200 source directories and more
	mk(t, dir, map[string]string{"src/p5/q/deep/er/file": "x", "src/p6/q/.envrc": "x"})
	set := Default()
	scanOf(t, set, dir, false)
	for _, c := range []struct {
		name   string
		change func() error
		most   int
	}{
		{"file made", func() error { return os.WriteFile(filepath.Join(dir, "src/p9/q/new"), nil, 0o644) }, 1},
		{"directory tree removed", func() error { return os.RemoveAll(filepath.Join(dir, "src/p5")) }, 1},
		{"directory renamed elsewhere", func() error {
			return os.Rename(filepath.Join(dir, "src/p6"), filepath.Join(dir, "e/f/p6"))
		}, 4},
		{"protected file planted", func() error { return os.WriteFile(filepath.Join(dir, "src/p7/q/.mcp.json"), nil, 0o644) }, 1},
	} {
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		got := scanOf(t, set, dir, false)
		if v := treeOf(t, set).visited; v > c.most {
			t.Errorf("%s: the scan visited %d directories, want at most %d", c.name, v, c.most)
		}
		fresh := Default()
		want := scanOf(t, fresh, dir, false)
		fresh.Close()
		if !maps.EqualFunc(got.Paths, want.Paths, func(a, b Found) bool { return a.Stat == b.Stat }) {
			t.Errorf("%s: found %v, a fresh scan %v", c.name, slices.Sorted(maps.Keys(got.Paths)), slices.Sorted(maps.Keys(want.Paths)))
		}
	}
}

// TestScansKeepNoDescriptorTheyDropped: scans that list a hooks
// directory twice (plain, then as the tree core.hooksPath names) and
// walk the tree again each time (a change inside a protected tree) hold
// no more descriptors after 30 of them than after the first.
func TestScansKeepNoDescriptorTheyDropped(t *testing.T) {
	dir := plantTree(t)
	mk(t, dir, map[string]string{"repo/.git/config": "[core]\n\thooksPath = ../tools/hooks\n"})
	set := Default()
	defer set.Close()
	open := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	scanOf(t, set, dir, false)
	before := open()
	for i := 0; i < 30; i++ {
		mk(t, dir, map[string]string{"tools/hooks/post-checkout": fmt.Sprint(i)})
		if err := os.Chmod(filepath.Join(dir, "tools/hooks/post-checkout"), os.FileMode(0o600+i%2*0o100)); err != nil {
			t.Fatal(err)
		}
		snap := scanOf(t, set, dir, false)
		if _, ok := snap.Paths["tools/hooks/post-checkout"]; !ok {
			t.Fatal("the hook was not seen")
		}
	}
	if after := open(); after > before+2 {
		t.Errorf("%d descriptors open after 30 scans, %d after the first", after, before)
	}
}
