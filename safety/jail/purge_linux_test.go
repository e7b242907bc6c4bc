//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

// deepLevels is how deep the trees a command may leave are built: with
// 24-byte names the path is about 37,500 bytes, nine times PATH_MAX.
const deepLevels = 1500

// buildDeepTree makes a chain of deepLevels directories beneath dir, each
// holding a small file, using fds only (the path is far longer than
// PATH_MAX). Every directory gets mode 000 except every tenth, which gets
// 0500 (so the one below it, mode 000, sits in a directory that refuses
// unlinking); a symbolic link to outside sits at the bottom.
func buildDeepTree(t testing.TB, dir, outside string) {
	t.Helper()
	cur, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	const name = "deep-directory-level-xyz"
	for i := range deepLevels {
		if err := unix.Mkdirat(cur, name, 0o700); err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		fd, err := unix.Openat(cur, "f", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o400)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		unix.Write(fd, []byte("left by the command"))
		unix.Close(fd)
		next, err := unix.Openat(cur, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		if i > 0 {
			mode := uint32(0)
			if i%10 == 0 {
				mode = 0o500
			}
			if err := unix.Fchmod(cur, mode); err != nil {
				t.Fatal(err)
			}
		}
		unix.Close(cur)
		cur = next
	}
	if err := unix.Symlinkat(outside, cur, "out"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fchmod(cur, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(cur)
}

// TestPurgeTreeRemovesDeepTreeWithModesThatRefuseEntry: a tree 1,500
// directories deep (a path nine times PATH_MAX) whose directories have
// mode 000 or 0500, with a file in each and a symbolic link to outside at
// the bottom, is removed completely; what the link names is untouched and
// the walk holds a bounded number of fds.
func TestPurgeTreeRemovesDeepTreeWithModesThatRefuseEntry(t *testing.T) {
	tmp := t.TempDir()
	outside := filepath.Join(tmp, "outside")
	writeFile(t, filepath.Join(outside, "keep"), "keep me")
	top := filepath.Join(tmp, "home")
	mkdirAll(t, top)
	buildDeepTree(t, top, outside)
	if err := os.Chmod(top, 0o500); err != nil {
		t.Fatal(err)
	}
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	before := fds()
	var peak int
	done := make(chan struct{})
	go func() { // sample the fds in use while the walk runs
		defer close(done)
		for {
			select {
			case <-time.After(time.Millisecond):
				peak = max(peak, fds())
			case <-done:
				return
			}
		}
	}()
	left, err := PurgeTree(top)
	done <- struct{}{}
	<-done
	if err != nil || left != (Usage{}) {
		t.Fatalf("PurgeTree: left %+v, %v", left, err)
	}
	if exists(top) {
		t.Fatal("the tree's top is still there")
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "keep me" {
		t.Fatalf("the file the link named was touched: %q %v", b, err)
	}
	if peak-before > purgeMaxFds+8 {
		t.Fatalf("the walk held %d fds at once, want at most about %d", peak-before, purgeMaxFds)
	}
	if left, err := PurgeTree(top); err != nil || left != (Usage{}) {
		t.Fatalf("PurgeTree of a path that is gone: %+v %v", left, err)
	}
}

// TestPurgeTreeMeasuresDeepTreeWithoutChangingIt: MeasureTree walks the
// same kind of tree (as root it can enter mode-000 directories; otherwise
// it counts what it may read) and removes nothing.
func TestPurgeTreeMeasuresDeepTreeWithoutChangingIt(t *testing.T) {
	tmp := t.TempDir()
	top := filepath.Join(tmp, "tmp")
	mkdirAll(t, top)
	buildDeepTree(t, top, "/")
	u, err := MeasureTree(top)
	if err != nil || u.Bytes <= 0 || u.Dirs < 2 {
		t.Fatalf("MeasureTree: %+v %v", u, err)
	}
	if os.Getuid() == 0 && (u.Dirs != deepLevels+1 || u.Files != deepLevels+1) {
		t.Fatalf("MeasureTree as root: %+v, want %d dirs and %d files", u, deepLevels+1, deepLevels+1)
	}
	if !exists(filepath.Join(top, "deep-directory-level-xyz")) {
		t.Fatal("MeasureTree removed something")
	}
	if left, err := PurgeTree(top); err != nil || exists(top) {
		t.Fatalf("PurgeTree after the measure: %+v %v", left, err)
	}
}

// TestPurgeTreeNeverEntersMountAndReportsWhatStays: a bind mount inside the
// tree (a directory of the same file system) is neither entered nor
// emptied; it and its ancestors stay, reported with their size, and
// everything else goes.
func TestPurgeTreeNeverEntersMountAndReportsWhatStays(t *testing.T) {
	if os.Getuid() != 0 {
		t.Log("mounting needs root; the root pass covers this")
		return
	}
	tmp := t.TempDir()
	c := newCanary(t, filepath.Join(tmp, "canary"), 4)
	top := filepath.Join(tmp, "run")
	writeFile(t, filepath.Join(top, "junk", "f"), "junk")
	mkdirAll(t, filepath.Join(top, "a", "mnt"))
	bindMount(t, c.dir, filepath.Join(top, "a", "mnt"))
	left, err := PurgeTree(top)
	if err == nil || !strings.Contains(err.Error(), "a/mnt") {
		t.Fatalf("PurgeTree with a mount inside: %v, want a refusal naming a/mnt", err)
	}
	c.check(t)
	if left.Dirs != 3 || left.Bytes <= 0 || exists(filepath.Join(top, "junk")) {
		t.Fatalf("left %+v (junk there: %v), want the mount and its two ancestors only", left, exists(filepath.Join(top, "junk")))
	}
	if u, err := MeasureTree(top); err != nil || u.Dirs != 3 {
		t.Fatalf("MeasureTree of what stayed: %+v %v", u, err)
	}
}

// TestPurgeTreeReportsImmutableFileWithItsSize: a file with the immutable
// attribute (chattr +i, which root cannot unlink either) stays; PurgeTree
// reports it with its size and removes the rest.
func TestPurgeTreeReportsImmutableFileWithItsSize(t *testing.T) {
	if os.Getuid() != 0 {
		t.Log("chattr +i needs root; the root pass covers this")
		return
	}
	tmp := t.TempDir()
	top := filepath.Join(tmp, "run")
	stuck := filepath.Join(top, "home", "stuck")
	writeFile(t, stuck, strings.Repeat("x", 64<<10))
	writeFile(t, filepath.Join(top, "tmp", "other"), "other")
	testfs.SetImmutable(t, stuck, true)
	t.Cleanup(func() { testfs.SetImmutable(t, stuck, false) })
	left, err := PurgeTree(top)
	if err == nil || !strings.Contains(err.Error(), "home/stuck") {
		t.Fatalf("PurgeTree: %v, want a refusal naming home/stuck", err)
	}
	if left.Files != 1 || left.Dirs != 2 || left.Bytes < 64<<10 {
		t.Fatalf("left %+v, want the file (64 KiB) and its two directories", left)
	}
	if exists(filepath.Join(top, "tmp")) {
		t.Fatal("the removable part stayed")
	}
}

// TestPurgeTreeUnprivileged re-runs the PurgeTree tests as an unprivileged
// user (setpriv), for whom modes are not bypassed: the walk must give
// directories mode 0700 itself.
func TestPurgeTreeUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^TestPurgeTree(RemovesDeepTreeWithModesThatRefuseEntry|MeasuresDeepTreeWithoutChangingIt|NeverEntersMountAndReportsWhatStays|ReportsImmutableFileWithItsSize)$")
}

// BenchmarkPurgeTree removes a 10,000-file tree (100 directories of 100
// files, each directory mode 0500) with PurgeTree, against os.RemoveAll on
// the same tree made 0700 (which it needs), in the same run; the tree is
// rebuilt outside the timer, on a tmpfs (root). Compare the two ns/op lines.
func BenchmarkPurgeTree(b *testing.B) {
	base := memDir(b) // a tmpfs: the disk's journal would dominate both

	build := func(modes os.FileMode) string {
		top := filepath.Join(base, "tree")
		for d := range 100 {
			dir := filepath.Join(top, "d"+strconv.Itoa(d))
			mkdirAll(b, dir)
			for f := range 100 {
				if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)), []byte("x"), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.Chmod(dir, modes); err != nil {
				b.Fatal(err)
			}
		}
		return top
	}
	b.Run("PurgeTree", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			top := build(0o500)
			b.StartTimer()
			if _, err := PurgeTree(top); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.RemoveAll", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			top := build(0o700)
			b.StartTimer()
			if err := os.RemoveAll(top); err != nil {
				b.Fatal(err)
			}
		}
	})
}
