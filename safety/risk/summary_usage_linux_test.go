package risk

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// TestSummaryUsageEqualsDirUsage: with SummaryLimits.Usage the summary's one
// walk measures exactly what jail's Dir.Usage measures (bytes, files,
// directories, skipped entries, newest mtime), and classifies exactly as
// the walk without it: a symlink is counted and never followed, another
// mount and a name jail refuses are skipped, and past the entry cap the
// classification stops but the measurement does not.
func TestSummaryUsageEqualsDirUsage(t *testing.T) {
	root := t.TempDir()
	genTree(t, root, 600, 5)
	write(t, root, "outside/big.bin", string(make([]byte, 64<<10)))
	write(t, root, "node_modules/m1/.env", "TOKEN=Zx9vQ2mmT7abc\n")
	if err := os.Symlink("../../outside", filepath.Join(root, "node_modules", "m1", "linked")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "node_modules/m2/bad\x01name.js", "x")
	mnt := filepath.Join(root, "node_modules", "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	write(t, mnt, "hidden.js", "not part of this tree")
	r := openRoot(t, root)
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		name string
		rel  string
		lim  SummaryLimits
	}{
		{"whole tree", ".", SummaryLimits{}},
		{"a find with a symlink, another mount and a refused name", "node_modules", SummaryLimits{MaxListed: 10}},
		{"past the entry cap", ".", SummaryLimits{MaxEntries: 50, MaxListed: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, err := e.Summarize(context.Background(), r, tc.rel, tc.lim)
			if err != nil {
				t.Fatal(err)
			}
			d := openDirT(t, r, tc.rel)
			tc.lim.Usage = true
			s, err := e.SummarizeDir(context.Background(), r, d, tc.lim)
			if err != nil {
				t.Fatal(err)
			}
			want, err := d.Usage(nil)
			if err != nil {
				t.Fatal(err)
			}
			sameUsage(t, s.Usage, want)
			if tc.name == "past the entry cap" && !s.Truncated {
				t.Fatal("the summary was not truncated at 50 entries")
			}
			if a, b := jsonOf(t, plain), jsonOf(t, s); a != b {
				t.Fatalf("measuring changed the summary:\nwithout: %s\nwith:    %s", a, b)
			}
		})
	}
}

// TestSummaryUsageOfVanishedEntry: an entry listed and gone before it is
// stat'ed is skipped by the summary's measurement as by Dir.Usage. The
// tree: p/a/b/c.txt (nested directories), p/a/link (a symlink) and the file
// p/gone, removed after p was listed: by Dir.Usage's stop before it enters
// p/a (gone is arranged to be listed after a), by the summary's progress
// before its first entry (a: entries go in name order).
func TestSummaryUsageOfVanishedEntry(t *testing.T) {
	root := t.TempDir()
	write(t, root, "p/a/b/c.txt", "nested")
	if err := os.Symlink("../../../elsewhere", filepath.Join(root, "p", "a", "link")); err != nil {
		t.Fatal(err)
	}
	gone := listedAfter(t, filepath.Join(root, "p"), "a")
	r := openRoot(t, root)
	d := openDirT(t, r, "p")
	want, err := d.Usage(func() bool { _ = os.Remove(gone); return false })
	if err != nil {
		t.Fatal(err)
	}
	if want.Skipped != 1 || want.Files != 2 || want.Dirs != 2 {
		t.Fatalf("Dir.Usage %+v: want the vanished entry skipped, 2 files, 2 directories", want)
	}
	write(t, root, "p/"+filepath.Base(gone), "")
	s, err := newEngine(t, Options{}).SummarizeDir(context.Background(), r, d, SummaryLimits{Usage: true, ProgressEvery: 1,
		Progress: func(entries, _, _ int) {
			if entries == 1 {
				_ = os.Remove(gone)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	sameUsage(t, s.Usage, want)
}

// TestSummaryWithUsageStopsWhenCancelled: a cancelled context stops the
// measuring walk as it stops the plain one.
func TestSummaryWithUsageStopsWhenCancelled(t *testing.T) {
	root := t.TempDir()
	genTree(t, root, 300, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := newEngine(t, Options{}).Summarize(ctx, openRoot(t, root), ".", SummaryLimits{Usage: true, ProgressEvery: 10,
		Progress: func(entries, _, _ int) {
			if entries >= 20 {
				cancel()
			}
		}})
	if err != ErrSummaryCancelled || s != nil {
		t.Fatalf("Summarize = %v, %v; want nil, ErrSummaryCancelled", s, err)
	}
}

// listedAfter creates an empty file in dir that the directory's listing
// (getdents order, which the file system chooses) puts after the entry
// first, and returns its path.
func listedAfter(t *testing.T, dir, first string) string {
	t.Helper()
	for i := range 64 {
		p := filepath.Join(dir, "gone"+string(rune('A'+i%26))+string(rune('a'+i/26)))
		write(t, dir, filepath.Base(p), "")
		if listingOrder(t, dir, first, filepath.Base(p)) {
			return p
		}
		// A file system that lists newest first: list first again after it.
		tmp := filepath.Join(dir, first+".moving")
		if err := os.Rename(filepath.Join(dir, first), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, first)); err != nil {
			t.Fatal(err)
		}
		if listingOrder(t, dir, first, filepath.Base(p)) {
			return p
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no name of 64 is listed after %s in %s", first, dir)
	return ""
}

// listingOrder reports whether dir's listing holds a before b.
func listingOrder(t *testing.T, dir, a, b string) bool {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		switch n {
		case a:
			return true
		case b:
			return false
		}
	}
	t.Fatalf("%s lists neither %s nor %s", dir, a, b)
	return false
}

func openDirT(t *testing.T, r *jail.Root, rel string) *jail.Dir {
	t.Helper()
	d, err := r.OpenDir(rel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func sameUsage(t *testing.T, got *jail.Usage, want jail.Usage) {
	t.Helper()
	if got == nil {
		t.Fatal("the summary has no usage")
	}
	if got.Bytes != want.Bytes || got.Files != want.Files || got.Dirs != want.Dirs ||
		got.Skipped != want.Skipped || !got.Newest.Equal(want.Newest) {
		t.Fatalf("summary usage %+v, Dir.Usage %+v", *got, want)
	}
	if want.Skipped == 0 {
		t.Fatal("the tree has no skipped entry: the test lost its point")
	}
}

func jsonOf(t *testing.T, s *Summary) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
