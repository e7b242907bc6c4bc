//go:build linux

package jail

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestRemoveContentsDoesNotFollowSymlinkOut(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		c := newCanary(t, filepath.Join(tmp, "canary"), 6)
		writeFile(t, filepath.Join(root, "tree", "f"), "junk")
		mkdirAll(t, filepath.Join(root, "tree", "d", "e"))
		symlink(t, c.dir, filepath.Join(root, "tree", "link"))
		symlink(t, filepath.Join(c.dir, "sub"), filepath.Join(root, "tree", "d", "e", "sublink"))
		symlink(t, filepath.Join(c.dir, "a-canary.txt"), filepath.Join(root, "tree", "d", "filelink"))
		r := openRoot(t, root)
		d := openDir(t, r, "tree")
		u, err := d.RemoveContents()
		if err != nil {
			t.Fatalf("RemoveContents: %v", err)
		}
		c.check(t)
		if ents, _ := os.ReadDir(filepath.Join(root, "tree")); len(ents) != 0 {
			t.Fatalf("tree not emptied: %v", ents)
		}
		if u.Files != 4 || u.Dirs != 2 {
			t.Errorf("Usage = %+v, want 4 files (1 file, 3 links) and 2 dirs", u)
		}
	})
}

func TestRemoveContentsDoesNotEnterMount(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		c := newCanary(t, filepath.Join(tmp, "canary"), 4)
		mkdirAll(t, filepath.Join(root, "tree", "a", "mnt"))
		mkdirAll(t, filepath.Join(root, "tree", "a", "bound"))
		writeFile(t, filepath.Join(root, "tree", "a", "junk"), "junk")
		writeFile(t, filepath.Join(root, "tree", "b", "junk"), "junk")
		mountTmpfs(t, filepath.Join(root, "tree", "a", "mnt"))
		writeFile(t, filepath.Join(root, "tree", "a", "mnt", "precious"), "keep me")
		bindMount(t, c.dir, filepath.Join(root, "tree", "a", "bound"))
		r := openRoot(t, root)
		d := openDir(t, r, "tree")
		_, err := d.RemoveContents()
		if err == nil {
			t.Fatal("RemoveContents reported success with mount points left in place")
		}
		if got, _ := os.ReadFile(filepath.Join(root, "tree", "a", "mnt", "precious")); string(got) != "keep me" {
			t.Fatalf("the file on the mounted tmpfs was touched: %q", got)
		}
		c.check(t)
		// Everything not under a mount is gone.
		for _, p := range []string{"tree/a/junk", "tree/b"} {
			if exists(filepath.Join(root, p)) {
				t.Errorf("%s survived", p)
			}
		}
	})
}

func TestRemoveContentsThroughFdAfterRename(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		writeFile(t, filepath.Join(root, "victim", "x", "f1"), "1")
		writeFile(t, filepath.Join(root, "victim", "f2"), "2")
		r := openRoot(t, root)
		d := openDir(t, r, "victim")
		want := d.Info().ID
		// After the check, the directory moves away and a new one takes its name.
		mkdirAll(t, filepath.Join(tmp, "elsewhere"))
		if err := os.Rename(filepath.Join(root, "victim"), filepath.Join(tmp, "elsewhere", "moved")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "victim", "keep"), "new owner")
		u, err := d.RemoveContents()
		if err != nil {
			t.Fatal(err)
		}
		if u.Files != 2 || u.Dirs != 1 {
			t.Errorf("removed %+v, want 2 files 1 dir", u)
		}
		if ents, err := os.ReadDir(filepath.Join(tmp, "elsewhere", "moved")); err != nil || len(ents) != 0 {
			t.Fatalf("the verified directory was not emptied: %v, %v", ents, err)
		}
		if got, _ := os.ReadFile(filepath.Join(root, "victim", "keep")); string(got) != "new owner" {
			t.Fatal("RemoveContents deleted by name: the new directory at the old path lost its file")
		}
		if identityOf(t, filepath.Join(tmp, "elsewhere", "moved")) != want {
			t.Fatal("identity changed")
		}
	})
}

func TestRemoveEmptyChildRefusesReplacedDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdirAll(t, filepath.Join(root, "c"))
	mkdirAll(t, filepath.Join(root, "ok"))
	writeFile(t, filepath.Join(root, "f"), "x")
	symlink(t, "ok", filepath.Join(root, "ln"))
	r := openRoot(t, root)
	top := openDir(t, r, ".")
	old, err := top.Lstat("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "c"), filepath.Join(root, "c.old")); err != nil {
		t.Fatal(err)
	}
	mkdirAll(t, filepath.Join(root, "c"))
	err = top.RemoveEmptyChild("c", old.ID)
	if !errors.Is(err, ErrIdentity) || result.CodeOf(err) != result.Stale {
		t.Fatalf("RemoveEmptyChild on a replaced directory = %v, want STALE", err)
	}
	if !exists(filepath.Join(root, "c")) {
		t.Fatal("the replacement was removed")
	}
	// A file or a symlink with the right name is not the directory either.
	fid := identityOf(t, filepath.Join(root, "f"))
	if err := top.RemoveEmptyChild("f", fid); !errors.Is(err, ErrIdentity) {
		t.Errorf("RemoveEmptyChild(file) = %v", err)
	}
	if err := top.RemoveEmptyChild("ln", identityOf(t, filepath.Join(root, "ln"))); !errors.Is(err, ErrIdentity) {
		t.Errorf("RemoveEmptyChild(symlink) = %v", err)
	}
	if err := top.RemoveEmptyChild("ln", identityOf(t, filepath.Join(root, "ok"))); !errors.Is(err, ErrIdentity) {
		t.Errorf("RemoveEmptyChild(symlink to the wanted dir) = %v", err)
	}
	if !exists(filepath.Join(root, "ok")) || !exists(filepath.Join(root, "ln")) {
		t.Fatal("a refused removal removed something")
	}
	if err := top.RemoveEmptyChild("../c", old.ID); !errors.Is(err, ErrEscape) {
		t.Errorf("RemoveEmptyChild(../c) = %v", err)
	}
	// The right identity removes it.
	if err := top.RemoveEmptyChild("ok", identityOf(t, filepath.Join(root, "ok"))); err != nil || exists(filepath.Join(root, "ok")) {
		t.Fatalf("RemoveEmptyChild with the right identity: %v", err)
	}
	// A non-empty directory is never removed.
	writeFile(t, filepath.Join(root, "c", "x"), "")
	if err := top.RemoveEmptyChild("c", identityOf(t, filepath.Join(root, "c"))); err == nil || !errors.Is(err, unix.ENOTEMPTY) {
		t.Fatalf("RemoveEmptyChild(non-empty) = %v", err)
	}
}

func TestRemoveContentsDeepTree(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	const depth = 300
	p := filepath.Join(tmp, "root", "tree")
	mkdirAll(t, p)
	// Built one level at a time through fds: the full path passes PATH_MAX.
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		name := "level-" + strconv.Itoa(i) + "-" + strings.Repeat("d", 20)
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := unix.Openat(fd, "f", unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(f)
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = next
	}
	unix.Close(fd)
	r := openRoot(t, filepath.Join(tmp, "root"))
	d := openDir(t, r, "tree")
	u, err := d.RemoveContents()
	if err != nil {
		t.Fatal(err)
	}
	if u.Dirs != depth || u.Files != depth {
		t.Fatalf("removed %+v, want %d dirs and %d files", u, depth, depth)
	}
	if ents, _ := os.ReadDir(p); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

func TestRemoveContentsReportsWhatItRemoved(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "t", "a"), strings.Repeat("x", 10000))
	writeFile(t, filepath.Join(root, "t", "d", "b"), strings.Repeat("y", 50000))
	r := openRoot(t, root)
	d := openDir(t, r, "t")
	before, err := d.Usage(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.RemoveContents()
	if err != nil {
		t.Fatal(err)
	}
	if got.Files != before.Files || got.Dirs != before.Dirs || got.Bytes != before.Bytes {
		t.Fatalf("RemoveContents reported %+v, Usage before was %+v", got, before)
	}
}

func TestRemoveContentsOfRootKeepsRoot(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	writeFile(t, filepath.Join(root, "a", "b"), "x")
	writeFile(t, filepath.Join(tmp, "sibling", "keep"), "x")
	r := openRoot(t, root)
	d := openDir(t, r, ".")
	if _, err := d.RemoveContents(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		t.Fatalf("root: %v, %v", ents, err)
	}
	if !exists(filepath.Join(tmp, "sibling", "keep")) {
		t.Fatal("a sibling of the root was touched")
	}
}

func TestUsageCountsDiskBytes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	tree := filepath.Join(tmp, "root", "tree")
	writeFile(t, filepath.Join(tree, "small"), "x")
	writeFile(t, filepath.Join(tree, "big"), strings.Repeat("b", 300000))
	writeFile(t, filepath.Join(tree, "d", "e", "mid"), strings.Repeat("m", 9000))
	writeFile(t, filepath.Join(tree, "empty", ".keep"), "")
	symlink(t, filepath.Join(tmp, "outside-big"), filepath.Join(tree, "link"))
	writeFile(t, filepath.Join(tmp, "outside-big"), strings.Repeat("o", 1<<20))
	// A sparse file: apparent size 64 MiB, almost no blocks.
	sp, err := os.Create(filepath.Join(tree, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	sp.Close()
	unix.Sync()

	r := openRoot(t, filepath.Join(tmp, "root"))
	d := openDir(t, r, "tree")
	u, err := d.Usage(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Reference 1: the sum of lstat blocks of everything below tree.
	var sum int64
	err = filepath.WalkDir(tree, func(p string, _ os.DirEntry, err error) error {
		if err != nil || p == tree {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		sum += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes != sum {
		t.Fatalf("Usage.Bytes = %d, lstat sum = %d", u.Bytes, sum)
	}
	// Reference 2: du, minus the directory's own blocks.
	out, err := exec.Command("du", "-s", "--block-size=1", tree).Output()
	if err != nil {
		t.Fatalf("du: %v", err)
	}
	du, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var self unix.Stat_t
	if err := unix.Lstat(tree, &self); err != nil {
		t.Fatal(err)
	}
	if u.Bytes != du-self.Blocks*512 {
		t.Fatalf("Usage.Bytes = %d, du = %d minus own %d", u.Bytes, du, self.Blocks*512)
	}
	if u.Files != 6 || u.Dirs != 3 || u.Skipped != 0 {
		t.Fatalf("Usage = %+v, want 6 files (small, big, mid, .keep, sparse, link) and 3 dirs", u)
	}
	if u.Bytes >= 64<<20 || u.Bytes < 300000 {
		t.Fatalf("Usage.Bytes = %d: apparent sizes, or the link was followed", u.Bytes)
	}
	if u.Newest.IsZero() {
		t.Fatal("Newest not set")
	}
}

func TestUsageStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 20 {
		writeFile(t, filepath.Join(root, "d"+strconv.Itoa(i), "f"), "x")
	}
	r := openRoot(t, root)
	d := openDir(t, r, ".")
	calls := 0
	u, err := d.Usage(func() bool { calls++; return calls > 3 })
	if err == nil || u.Dirs > 4 {
		t.Fatalf("Usage after cancel: %+v, %v", u, err)
	}
}
