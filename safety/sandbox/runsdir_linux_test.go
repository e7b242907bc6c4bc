package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

// deepTreePy leaves, in $HOME and $TMPDIR, a chain of 1,500 directories
// with a file in each and a mode-000 leaf, then makes each directory of the
// chain mode 000, every tenth 0500.
const deepTreePy = `import os
def plant(top):
    os.chdir(top)
    for i in range(1500):
        os.mkdir("deep-directory-level-xyz", 0o700)
        open("f", "w").write("left")
        os.chdir("deep-directory-level-xyz")
    os.mkdir("leaf", 0)
    for i in range(1500):
        os.chdir("..")
        os.chmod("deep-directory-level-xyz", 0o500 if i % 10 == 0 else 0)
plant(os.environ["HOME"])
plant(os.environ["TMPDIR"])
print("planted")
`

// TestRunsDirOfADeadServerWithDeepUnreadableTreeIsRemoved: a command in the
// sandbox leaves trees 1,500 deep with modes 000 and 0500 in its HOME and
// TMPDIR, which lie in the runs directory of a server that then died (its
// lock free); the next ClaimRunsDir removes all of it and reports nothing.
// Runs in the unprivileged pass too (TestAttacksUnprivileged), where
// os.RemoveAll cannot enter the directories.
func TestRunsDirOfADeadServerWithDeepUnreadableTreeIsRemoved(t *testing.T) {
	base := t.TempDir()
	dead := filepath.Join(base, "i-dead")
	b := &box{jail: filepath.Join(base, "jail"), home: filepath.Join(dead, "r-1", "home"), tmp: filepath.Join(dead, "r-1", "tmp")}
	for _, d := range []string{b.jail, dead, filepath.Join(dead, "r-1"), b.home, b.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dead, runsLock), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.jail, "plant.py"), []byte(deepTreePy), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), b.spec(t, "python3", "plant.py"))
	if err != nil || out.ExitCode != 0 || !strings.Contains(b.stdout.String(), "planted") {
		t.Fatalf("the planting command: %+v %v\n%s", out, err, b.stderr.String())
	}
	var reported []Leftover
	_, release, err := ClaimRunsDir(base, func(l Leftover) { reported = append(reported, l) })
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if exists(dead) || len(reported) > 0 {
		t.Fatalf("the dead server's runs directory: still there %v, reported %+v", exists(dead), reported)
	}
}

// TestLeftoverRunsAreReportedWithTheirSize: a dead server's runs directory
// holding a file with the immutable attribute (set as root, as DESIGN §6
// injects faults) is listed by LeftoverRuns with its size before a claim,
// reported by ClaimRunsDir with its size and the entry that stays, and the
// rest of it is removed. A live server's directory is never listed.
func TestLeftoverRunsAreReportedWithTheirSize(t *testing.T) {
	if os.Getuid() != 0 {
		t.Log("setting the immutable attribute needs root; the root pass covers this")
		return
	}
	base := t.TempDir()
	dead := filepath.Join(base, "i-dead")
	stuck := filepath.Join(dead, "r-1", "home", "stuck")
	if err := os.MkdirAll(filepath.Dir(stuck), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dead, "r-1", "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{stuck, filepath.Join(dead, "r-1", "tmp", "removable")} {
		if err := os.WriteFile(f, make([]byte, 64<<10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	testfs.SetImmutable(t, stuck, true)
	t.Cleanup(func() { testfs.SetImmutable(t, stuck, false) })
	_, releaseLive, err := ClaimRunsDir(base, nil)
	if err == nil {
		defer releaseLive()
	}
	// The claim above already tried: what stays is listed, the live one is not.
	ls := LeftoverRuns(base)
	if len(ls) != 1 || ls[0].Path != dead || ls[0].Bytes < 64<<10 {
		t.Fatalf("LeftoverRuns = %+v, want %s alone with at least 64 KiB", ls, dead)
	}
	if exists(filepath.Join(dead, "r-1", "tmp")) {
		t.Fatal("the removable part of the dead server's directory stayed")
	}
	var reported []Leftover
	_, release, err := ClaimRunsDir(base, func(l Leftover) { reported = append(reported, l) })
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if len(reported) != 1 || reported[0].Path != dead || reported[0].Bytes < 64<<10 ||
		!strings.Contains(reported[0].Reason, "r-1/home/stuck") {
		t.Fatalf("ClaimRunsDir reported %+v, want %s with its size and the entry that stays", reported, dead)
	}
}

// TestCacheOfAnotherJailIsAnotherDirectory: two jails get different cache
// directories under the same state directory, the same jail the same one
// each time, a jail moved away and made again at its path a new one, and
// shared caches one location for all.
func TestCacheOfAnotherJailIsAnotherDirectory(t *testing.T) {
	state, base := t.TempDir(), t.TempDir()
	j1, j2 := filepath.Join(base, "j1"), filepath.Join(base, "j2")
	for _, j := range []string{j1, j2} {
		if err := os.Mkdir(j, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dirOf := func(jail string, shared bool) CacheSet {
		t.Helper()
		cs, err := Caches(state, jail, []string{"go", "pip"}, shared)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a, b, a2 := dirOf(j1, false), dirOf(j2, false), dirOf(j1, false)
	if a.Dir == b.Dir || a.Dir != a2.Dir || !strings.HasPrefix(filepath.Base(a.Dir), "jail-j1-") {
		t.Fatalf("cache directories %s, %s, again %s", a.Dir, b.Dir, a2.Dir)
	}
	for _, p := range append(append([]string{}, a.Paths...), a.Dir, filepath.Dir(a.Dir)) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want mode 0700", p, fi, err)
		}
	}
	if err := os.Rename(j1, j1+"-old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(j1, 0o700); err != nil {
		t.Fatal(err)
	}
	if again := dirOf(j1, false); again.Dir == a.Dir {
		t.Fatalf("a jail made again at %s got the old jail's caches %s", j1, again.Dir)
	}
	s1, s2 := dirOf(j1, true), dirOf(j2, true)
	if s1.Dir != s2.Dir || s1.Dir != filepath.Join(state, "caches") || s1.Paths[0] != filepath.Join(state, "caches", "go") {
		t.Fatalf("shared caches: %+v and %+v", s1, s2)
	}
}
