//go:build linux

package jail

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// resolvers runs f once with openat2 and once with the component walk
// (walkBeneath) that stands in for it on kernels without openat2. Tests that
// call it flip a package-level flag, so they must not use t.Parallel.
func resolvers(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	t.Run("openat2", func(t *testing.T) {
		f(t)
		if noOpenat2.Load() {
			t.Fatal("openat2 was reported missing on this kernel: the openat2 run tested the fallback")
		}
	})
	t.Run("walk", func(t *testing.T) {
		noOpenat2.Store(true)
		t.Cleanup(func() { noOpenat2.Store(false) })
		f(t)
	})
}

func openRoot(t testing.TB, path string) *Root {
	t.Helper()
	r, err := OpenRoot(path)
	if err != nil {
		t.Fatalf("OpenRoot(%q): %v", path, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func openDir(t testing.TB, r *Root, rel string) *Dir {
	t.Helper()
	d, err := r.OpenDir(rel)
	if err != nil {
		t.Fatalf("OpenDir(%q): %v", rel, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// mountTmpfs mounts a 1 MiB tmpfs at dir and unmounts it when the test ends
// (before t.TempDir's removal, cleanups being last-in first-out).
func mountTmpfs(t testing.TB, dir string) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v (these tests need root)", dir, err)
	}
	t.Cleanup(func() { unmount(t, dir) })
}

// memDir is a t.TempDir with a tmpfs on it, for tests that churn through
// thousands of directory operations: the disk's journal would make them slow.
func memDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v (these tests need root)", dir, err)
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// bindMount binds src onto dst (both must exist, of the same kind).
func bindMount(t testing.TB, src, dst string) {
	t.Helper()
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s onto %s: %v (these tests need root)", src, dst, err)
	}
	t.Cleanup(func() { unmount(t, dst) })
}

func unmount(t testing.TB, dir string) {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		t.Errorf("unmount %s: %v", dir, err)
	}
}

func mkdirAll(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	mkdirAll(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func identityOf(t testing.TB, p string) Identity {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return Identity{Dev: st.Dev, Ino: st.Ino}
}

// wantCode fails unless err is a refusal with code.
func wantCode(t testing.TB, what string, err error, code result.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %s", what, code)
	}
	if got := result.CodeOf(err); got != code {
		t.Fatalf("%s: code %s (%v), want %s", what, got, err, code)
	}
}

// canary is a tree outside every root with known content; intact reports
// the first difference.
type canary struct {
	dir   string
	files map[string]string
}

func newCanary(t testing.TB, dir string, n int) *canary {
	t.Helper()
	c := &canary{dir: dir, files: map[string]string{}}
	for i := range n {
		name := filepath.Join("sub", string(rune('a'+i%26))+"-canary.txt")
		if i%2 == 0 {
			name = string(rune('a'+i%26)) + "-canary.txt"
		}
		c.files[name] = "canary " + name
		writeFile(t, filepath.Join(dir, name), c.files[name])
	}
	return c
}

func (c *canary) check(t testing.TB) {
	t.Helper()
	for name, want := range c.files {
		got, err := os.ReadFile(filepath.Join(c.dir, name))
		if err != nil || string(got) != want {
			t.Fatalf("canary %s damaged: %q, %v", name, got, err)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
