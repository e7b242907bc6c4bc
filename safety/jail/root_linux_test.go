//go:build linux

package jail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestOpenRootRefusesSymlinkedRoot(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	mkdirAll(t, filepath.Join(tmp, "real"))
	symlink(t, filepath.Join(tmp, "real"), filepath.Join(tmp, "link"))
	for _, p := range []string{filepath.Join(tmp, "link"), filepath.Join(tmp, "link") + "/"} {
		t.Run(caseName(strings.TrimPrefix(p, tmp+"/")), func(t *testing.T) {
			r, err := OpenRoot(p)
			if !errors.Is(err, ErrRootSymlink) {
				if r != nil {
					r.Close()
				}
				t.Errorf("OpenRoot(%q) = %v, want ErrRootSymlink", p, err)
			}
		})
	}
}

func TestOpenRootRefusesMissingRoot(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	symlink(t, filepath.Join(tmp, "nowhere"), filepath.Join(tmp, "dangling"))
	for _, p := range []string{filepath.Join(tmp, "missing"), filepath.Join(tmp, "missing", "deeper")} {
		t.Run(caseName(strings.TrimPrefix(p, tmp+"/")), func(t *testing.T) {
			if _, err := OpenRoot(p); !errors.Is(err, ErrRootNotDir) {
				t.Errorf("OpenRoot(%q) = %v, want ErrRootNotDir", p, err)
			}
		})
	}
	if _, err := OpenRoot(filepath.Join(tmp, "dangling")); !errors.Is(err, ErrRootSymlink) {
		t.Errorf("dangling symlink root: %v, want ErrRootSymlink", err)
	}
}

func TestOpenRootRefusesFileAsRoot(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "f"), "x")
	if err := unix.Mkfifo(filepath.Join(tmp, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(tmp, "f"), filepath.Join(tmp, "fifo"), "/dev/null", filepath.Join(tmp, "f", "below")} {
		t.Run(caseName(strings.TrimPrefix(p, tmp+"/")), func(t *testing.T) {
			if _, err := OpenRoot(p); !errors.Is(err, ErrRootNotDir) {
				t.Errorf("OpenRoot(%q) = %v, want ErrRootNotDir", p, err)
			}
		})
	}
}

func TestOpenRootRefusesRelativePath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", ".", "relative/dir", "./x", "../x", "/x/a\x00b", "/x/a\nb", "/x/\xff"} {
		t.Run(caseName(p), func(t *testing.T) {
			if _, err := OpenRoot(p); !errors.Is(err, ErrRootInvalid) {
				t.Errorf("OpenRoot(%q) = %v, want ErrRootInvalid", p, err)
			}
		})
	}
}

func TestOpenRootCanonicalisesSymlinkedParent(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	mkdirAll(t, filepath.Join(tmp, "real", "root"))
	symlink(t, filepath.Join(tmp, "real"), filepath.Join(tmp, "parentlink"))
	r := openRoot(t, filepath.Join(tmp, "parentlink", "root")+"/")
	want, err := filepath.EvalSymlinks(filepath.Join(tmp, "real", "root"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Path() != want {
		t.Fatalf("Path() = %q, want the canonical %q", r.Path(), want)
	}
	if r.Identity() != identityOf(t, want) {
		t.Fatalf("Identity() = %v, want %v", r.Identity(), identityOf(t, want))
	}
	// An absolute request spelled through the link is outside the canonical
	// root lexically; spelled canonically it is inside.
	if rel, err := r.Clean(filepath.Join(want, "x")); err != nil || rel != "x" {
		t.Fatalf("Clean(canonical/x) = %q, %v", rel, err)
	}
	// Swapping the parent link afterwards changes nothing: the root is an fd.
	writeFile(t, filepath.Join(want, "mine"), "1")
	mkdirAll(t, filepath.Join(tmp, "other", "root"))
	if err := os.Remove(filepath.Join(tmp, "parentlink")); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(tmp, "other"), filepath.Join(tmp, "parentlink"))
	if _, err := r.Lstat("mine"); err != nil {
		t.Fatalf("the root followed its former parent link: %v", err)
	}
}

func TestOpenDirRefusesSymlinkLeavingRoot(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		out := filepath.Join(tmp, "outside")
		mkdirAll(t, filepath.Join(out, "deeper"))
		mkdirAll(t, filepath.Join(root, "a"))
		symlink(t, out, filepath.Join(root, "abs"))
		symlink(t, "../outside", filepath.Join(root, "rel"))
		symlink(t, "/", filepath.Join(root, "slash"))
		r := openRoot(t, root)
		for _, rel := range []string{"abs", "rel", "slash", "abs/deeper", "rel/deeper", "slash/etc"} {
			t.Run("Root.OpenDir "+caseName(rel), func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
				}
				wantCode(t, "Root.OpenDir("+rel+")", err, result.PathEscape)
				if _, err := r.OpenFile(rel); err == nil {
					t.Errorf("OpenFile(%q) opened through a symlink", rel)
				}
			})
		}
		// Lexical escapes handed past Clean are refused by the anchored open too.
		for _, rel := range []string{"..", "../outside", "a/../../outside", out} {
			t.Run("Root.OpenDir "+caseName(strings.Replace(rel, tmp, "$TMP", 1)), func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
				}
				wantCode(t, "Root.OpenDir("+rel+")", err, result.PathEscape)
			})
		}
		top := openDir(t, r, ".")
		for _, name := range []string{"abs", "rel", "slash"} {
			t.Run("Dir.OpenDir "+caseName(name), func(t *testing.T) {
				_, err := top.OpenDir(name)
				wantCode(t, "Dir.OpenDir("+name+")", err, result.PathEscape)
			})
		}
	})
}

func TestOpenDirRefusesSymlinkInsideRootToo(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		mkdirAll(t, filepath.Join(root, "real", "sub"))
		writeFile(t, filepath.Join(root, "real", "f"), "x")
		symlink(t, "real", filepath.Join(root, "link"))
		symlink(t, filepath.Join(root, "real"), filepath.Join(root, "abslink"))
		symlink(t, "f", filepath.Join(root, "real", "flink"))
		r := openRoot(t, root)
		for _, rel := range []string{"link", "abslink", "link/sub", "abslink/sub"} {
			t.Run("Root.OpenDir "+caseName(rel), func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
				}
				wantCode(t, "Root.OpenDir("+rel+")", err, result.PathEscape)
			})
		}
		for _, rel := range []string{"link/f", "real/flink"} {
			t.Run("OpenFile "+caseName(rel), func(t *testing.T) {
				f, err := r.OpenFile(rel)
				if err == nil {
					f.Close()
				}
				wantCode(t, "Root.OpenFile("+rel+")", err, result.PathEscape)
			})
		}
		top := openDir(t, r, ".")
		_, err := top.OpenDir("link")
		wantCode(t, "Dir.OpenDir(link)", err, result.PathEscape)
		// The real directory is fine.
		d := openDir(t, r, "real/sub")
		if d.Info().ID != identityOf(t, filepath.Join(root, "real", "sub")) || d.Rel() != "real/sub" {
			t.Fatalf("real/sub opened as %+v", d.Info())
		}
	})
}

func TestOpenDirRefusesIntermediateSymlinkComponent(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		mkdirAll(t, filepath.Join(root, "a", "real", "b", "c"))
		symlink(t, "real", filepath.Join(root, "a", "link"))
		writeFile(t, filepath.Join(root, "a", "real", "b", "f"), "x")
		r := openRoot(t, root)
		for _, rel := range []string{"a/link/b", "a/link/b/c"} {
			t.Run("Root.OpenDir "+caseName(rel), func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
				}
				wantCode(t, "OpenDir("+rel+")", err, result.PathEscape)
				if _, err := r.Lstat(rel); result.CodeOf(err) != result.PathEscape {
					t.Errorf("Lstat(%q) = %v, want PATH_ESCAPE", rel, err)
				}
			})
		}
		if f, err := r.OpenFile("a/link/b/f"); err == nil {
			f.Close()
			t.Fatal("OpenFile through an intermediate symlink succeeded")
		}
		// A regular file as an intermediate component is not a directory.
		_, err := r.OpenDir("a/real/b/f/x")
		wantCode(t, "OpenDir(file/x)", err, result.NotFound)
	})
}

func TestOpenDirRefusesMountInsideRoot(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		mkdirAll(t, filepath.Join(root, "sub"))
		mkdirAll(t, filepath.Join(root, "deep", "er"))
		mountTmpfs(t, filepath.Join(root, "sub"))
		mountTmpfs(t, filepath.Join(root, "deep", "er"))
		mkdirAll(t, filepath.Join(root, "sub", "inner"))
		r := openRoot(t, root)
		for _, rel := range []string{"sub", "sub/inner", "deep/er"} {
			t.Run("Root.OpenDir "+caseName(rel), func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
				}
				wantCode(t, "Root.OpenDir("+rel+")", err, result.PathEscape)
			})
		}
		top := openDir(t, r, ".")
		_, err := top.OpenDir("sub")
		wantCode(t, "Dir.OpenDir(sub)", err, result.PathEscape)
		if !errors.Is(err, ErrMount) {
			t.Errorf("Dir.OpenDir(sub) = %v, want ErrMount", err)
		}
		deep := openDir(t, r, "deep")
		_, err = deep.OpenDir("er")
		wantCode(t, "Dir.OpenDir(deep/er)", err, result.PathEscape)
		// Lstat shows the mount point for what it is.
		info, err := r.Lstat("sub")
		if err != nil || !info.MountRoot {
			t.Errorf("Lstat(sub) = %+v, %v: want MountRoot", info, err)
		}
	})
}

func TestOpenDirRefusesBindMountOfSameFilesystem(t *testing.T) {
	// A bind mount keeps the device number: only the mount-root check and
	// RESOLVE_NO_XDEV catch it.
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		c := newCanary(t, filepath.Join(tmp, "canary"), 4)
		mkdirAll(t, filepath.Join(root, "bound"))
		bindMount(t, c.dir, filepath.Join(root, "bound"))
		r := openRoot(t, root)
		d, err := r.OpenDir("bound/sub")
		if err == nil {
			d.Close()
		}
		wantCode(t, "Root.OpenDir(bound/sub)", err, result.PathEscape)
		top := openDir(t, r, ".")
		_, err = top.OpenDir("bound")
		wantCode(t, "Dir.OpenDir(bound)", err, result.PathEscape)
		f, err := r.OpenFile("bound/a-canary.txt")
		if err == nil {
			f.Close()
		}
		wantCode(t, "OpenFile(bound/a-canary.txt)", err, result.PathEscape)
	})
}

func TestOpenFileRefusesBindMountedFile(t *testing.T) {
	// A secret outside the root bound onto a name inside it.
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		writeFile(t, filepath.Join(tmp, "secret"), "outside")
		writeFile(t, filepath.Join(root, "d", "innocent"), "inside")
		bindMount(t, filepath.Join(tmp, "secret"), filepath.Join(root, "d", "innocent"))
		r := openRoot(t, root)
		f, err := r.OpenFile("d/innocent")
		if err == nil {
			f.Close()
		}
		wantCode(t, "OpenFile(d/innocent)", err, result.PathEscape)
		d := openDir(t, r, "d")
		u, err := d.Usage(nil)
		if err != nil || u.Files != 0 || u.Bytes != 0 || u.Skipped != 1 {
			t.Errorf("Usage counted a bind-mounted file: %+v, %v", u, err)
		}
	})
}

func TestOpenFileRefusesNonRegularFiles(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		mkdirAll(t, filepath.Join(root, "d"))
		if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "d", "f"), "hello")
		r := openRoot(t, root)
		for _, rel := range []string{"fifo", "d"} {
			t.Run("OpenFile "+caseName(rel), func(t *testing.T) {
				f, err := r.OpenFile(rel)
				if err == nil {
					f.Close()
					t.Errorf("OpenFile(%q) opened a non-regular file", rel)
				}
			})
		}
		f, err := r.OpenFile("d/f")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, 16)
		if n, _ := f.Read(b); string(b[:n]) != "hello" {
			t.Fatalf("read %q", b[:n])
		}
	})
}

func TestLstatDoesNotFollowFinalSymlink(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		writeFile(t, filepath.Join(tmp, "big"), string(make([]byte, 100000)))
		mkdirAll(t, filepath.Join(root, "d"))
		symlink(t, filepath.Join(tmp, "big"), filepath.Join(root, "d", "out"))
		symlink(t, "nowhere", filepath.Join(root, "d", "dangling"))
		r := openRoot(t, root)
		for _, rel := range []string{"d/out", "d/dangling"} {
			t.Run("Lstat "+caseName(rel), func(t *testing.T) {
				info, err := r.Lstat(rel)
				if err != nil {
					t.Fatalf("Lstat(%q): %v", rel, err)
				}
				if !info.IsSymlink() || info.IsRegular() || info.IsDir() {
					t.Errorf("Lstat(%q) mode %v: followed the link", rel, info.Mode)
				}
				if info.ID != identityOf(t, filepath.Join(root, rel)) {
					t.Errorf("Lstat(%q) identity is not the link's", rel)
				}
				if info.Size >= 100000 || info.Name != filepath.Base(rel) {
					t.Errorf("Lstat(%q) = %+v", rel, info)
				}
			})
		}
		if _, err := r.Lstat("d/missing"); !errors.Is(err, fs.ErrNotExist) || result.CodeOf(err) != result.NotFound {
			t.Errorf("Lstat(missing) = %v", err)
		}
		if info, err := r.Lstat("."); err != nil || info.ID != r.Identity() {
			t.Errorf("Lstat(.) = %+v, %v", info, err)
		}
	})
}

func TestReadDirListsTypes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdirAll(t, filepath.Join(root, "dir"))
	writeFile(t, filepath.Join(root, "file"), "x")
	symlink(t, "dir", filepath.Join(root, "link"))
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(root, "sock")}); err != nil {
		t.Fatal(err)
	}
	r := openRoot(t, root)
	d := openDir(t, r, ".")
	want := map[string]fs.FileMode{"dir": fs.ModeDir, "file": 0, "link": fs.ModeSymlink, "fifo": fs.ModeNamedPipe, "sock": fs.ModeSocket}
	for range 2 { // a second read starts over from the beginning
		ents, err := d.ReadDir()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]fs.FileMode{}
		for _, e := range ents {
			got[e.Name] = e.Type
		}
		if len(got) != len(want) {
			t.Fatalf("ReadDir = %v, want %v", got, want)
		}
		for n, m := range want {
			if g, ok := got[n]; !ok || g != m {
				t.Errorf("%s: type %v, want %v", n, g, m)
			}
		}
	}
}

func TestReadDirListsManyAndOddNames(t *testing.T) {
	// More entries than one getdents buffer holds, names of every length.
	t.Parallel()
	root := t.TempDir()
	var want []string
	for i := range 3000 {
		// ASCII and two-byte runes, short names and names near the 255-byte limit.
		n := string(rune('a'+i%26)) + "-" + itoa(i) + "-" + string([]rune("ééé")[:i%3])
		if i%97 == 0 {
			n += "-" + string(bytesOf('z', 240))
		}
		want = append(want, n)
		writeFile(t, filepath.Join(root, n), "")
	}
	r := openRoot(t, root)
	d := openDir(t, r, ".")
	ents, err := d.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ReadDir returned %d names, want %d", len(got), len(want))
	}
}

func TestConcurrentReadDirOfRootDoesNotShareOffset(t *testing.T) {
	// Two Dirs of the root read at the same time must each see every entry:
	// a dup'd fd would share one directory offset between them.
	t.Parallel()
	root := t.TempDir()
	const n = 2000
	for i := range n {
		writeFile(t, filepath.Join(root, "f"+itoa(i)), "")
	}
	r := openRoot(t, root)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				d, err := r.OpenDir(".")
				if err != nil {
					errs <- err.Error()
					return
				}
				ents, err := d.ReadDir()
				d.Close()
				if err != nil || len(ents) != n {
					errs <- "ReadDir saw " + itoa(len(ents)) + " entries, want " + itoa(n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestDirStatSeesChangesThroughFd(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	mkdirAll(t, filepath.Join(tmp, "root", "d"))
	r := openRoot(t, filepath.Join(tmp, "root"))
	d := openDir(t, r, "d")
	before := d.Info()
	if err := os.Rename(filepath.Join(tmp, "root", "d"), filepath.Join(tmp, "moved")); err != nil {
		t.Fatal(err)
	}
	after, err := d.Stat()
	if err != nil || after.ID != before.ID || after.ID != identityOf(t, filepath.Join(tmp, "moved")) {
		t.Fatalf("Stat after rename = %+v, %v; before %+v", after, err, before)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestOpenDirTreatsDotAndDoubleSlashTheSameInBothResolvers(t *testing.T) {
	// The fallback walk must not be stricter or looser than openat2 about
	// spellings Clean would have normalised.
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		mkdirAll(t, filepath.Join(root, "a", "b"))
		r := openRoot(t, root)
		want := identityOf(t, filepath.Join(root, "a", "b"))
		for _, rel := range []string{"a/b", "a/./b", "a//b", "./a/b", "a/b/"} {
			d, err := r.OpenDir(rel)
			if err != nil {
				t.Errorf("OpenDir(%q): %v", rel, err)
				continue
			}
			if d.Info().ID != want {
				t.Errorf("OpenDir(%q) opened %+v", rel, d.Info().ID)
			}
			d.Close()
		}
		for _, rel := range []string{"/a/b", "/", "a/b/../../.."} {
			t.Run("Root.OpenDir "+caseName(rel), func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
				}
				wantCode(t, "OpenDir("+rel+")", err, result.PathEscape)
			})
		}
	})
}
