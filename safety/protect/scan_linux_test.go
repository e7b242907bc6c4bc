package protect

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func scanOf(t *testing.T, s *Set, dir string, backup bool) *Snapshot {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	snap, err := s.Scan(fd, dir, backup)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func mk(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScanFindsHooksPathAndSkipsObjects: the directory core.hooksPath
// names is protected, and a repository's objects are never walked.
func TestScanFindsHooksPathAndSkipsObjects(t *testing.T) {
	dir := t.TempDir()
	mk(t, dir, map[string]string{
		".git/config":                            "[core]\n\trepositoryformatversion = 0\n[core]\n\thooksPath = tools/hooks\n",
		".git/objects/ab/cd":                     "x",
		".git/hooks/pre-commit":                  "#!/bin/sh\n",
		"tools/hooks/pre-commit":                 "#!/bin/sh\n",
		"src/.envrc":                             "x",
		"src/main.go":                            "package main",
		"node_modules/pkg/.vscode/settings.json": "{}",
	})
	set := Default()
	// Twice, past the hot window: the second scan works from what the
	// first remembered, listing nothing again.
	time.Sleep(time.Duration(hotWindow) + 50*time.Millisecond)
	for round := 0; round < 2; round++ {
		snap := scanOf(t, set, dir, round == 0)
		if round == 1 && snap.Dirs != 0 {
			t.Errorf("the second scan listed %d directories again", snap.Dirs)
		}
		for _, want := range []string{".git", ".git/config", ".git/hooks", ".git/hooks/pre-commit", "tools/hooks", "tools/hooks/pre-commit", "src/.envrc"} {
			if _, ok := snap.Paths[want]; !ok {
				t.Errorf("round %d: %s not found: %v", round, want, snap.Paths)
			}
		}
	}
	snap := scanOf(t, set, dir, false)
	for rel := range snap.Paths {
		if rel == "src/main.go" || filepath.Dir(rel) == ".git/objects/ab" || filepath.Dir(rel) == "node_modules/pkg" {
			t.Errorf("%s is not protected but was recorded", rel)
		}
	}
}

// TestUndoRestoresChangedAndQuarantinesPlanted: a changed hook is moved
// to the quarantine and its original written back; a planted .envrc is
// moved out; a removed config is written back; nothing is overwritten.
func TestUndoRestoresChangedAndQuarantinesPlanted(t *testing.T) {
	dir, q := t.TempDir(), t.TempDir()
	mk(t, dir, map[string]string{".git/config": "[core]\n", ".git/hooks/pre-commit": "original\n"})
	s := Default()
	before := scanOf(t, s, dir, true)
	mk(t, dir, map[string]string{".git/hooks/pre-commit": "planted and longer\n", "a/.envrc": "planted\n"})
	if err := os.Remove(filepath.Join(dir, ".git/config")); err != nil {
		t.Fatal(err)
	}
	after := scanOf(t, s, dir, false)
	changes := Diff(before, after)
	fd, _ := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	defer unix.Close(fd)
	changes, err := Undo(fd, dir, changes, before, q)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range changes {
		got[c.Path] = c.Attempted + ": " + c.Outcome
	}
	want := map[string]string{
		".git/config":           "remove: original restored",
		".git/hooks/pre-commit": "change: moved to quarantine; original restored",
		"a/.envrc":              "create: moved to quarantine",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("changes: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git/hooks/pre-commit")); string(b) != "original\n" {
		t.Errorf("pre-commit holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a/.envrc")); err == nil {
		t.Error("the planted .envrc is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config holds %q", b)
	}
	// What was planted or changed is in the quarantine, with a manifest.
	runs, _ := os.ReadDir(q)
	if len(runs) != 1 {
		t.Fatalf("quarantine runs: %v", runs)
	}
	m, err := readManifest(filepath.Join(q, runs[0].Name()))
	if err != nil || len(m) != 2 {
		t.Fatalf("manifest: %v %+v", err, m)
	}
}

// TestRememberedTreeStillSeesEveryChange: once a scan remembers the tree,
// a protected path created deep in an unchanged part, one behind a
// directory renamed into place, and a directory swapped for a link are
// all seen by the next scan, which lists only what changed.
func TestRememberedTreeStillSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	mk(t, dir, map[string]string{"a/b/c/d/file": "x", "e/f/file": "x", "g/h/file": "x"})
	set := Default()
	settle := func() { time.Sleep(time.Duration(hotWindow) + 50*time.Millisecond) }
	settle()
	scanOf(t, set, dir, true)
	// New protected file deep in the tree.
	mk(t, dir, map[string]string{"a/b/c/d/.envrc": "planted"})
	// A directory holding a planted .vscode, renamed into place.
	mk(t, dir, map[string]string{"staging/.vscode/tasks.json": "{}"})
	if err := os.Rename(filepath.Join(dir, "staging"), filepath.Join(dir, "e/f/moved")); err != nil {
		t.Fatal(err)
	}
	// A directory replaced by a link to one holding a planted .mcp.json.
	mk(t, dir, map[string]string{"other/.mcp.json": "{}"})
	if err := os.RemoveAll(filepath.Join(dir, "g/h")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(dir, "g/h")); err != nil {
		t.Fatal(err)
	}
	settle()
	snap := scanOf(t, set, dir, false)
	for _, want := range []string{"a/b/c/d/.envrc", "e/f/moved/.vscode", "other/.mcp.json"} {
		if _, ok := snap.Paths[want]; !ok {
			t.Errorf("%s not seen: %v", want, snap.Paths)
		}
	}
	if _, ok := snap.Paths["g/h/.mcp.json"]; ok {
		t.Error("the scan followed a link")
	}
	if snap.Dirs == 0 || snap.Dirs > 8 {
		t.Errorf("the scan listed %d directories; want only the changed ones", snap.Dirs)
	}
}
