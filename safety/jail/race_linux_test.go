//go:build linux

package jail

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// swapper is the adversary: while running it replaces the directory at
// victim with a symlink to target and back, in a tight loop. It alternates
// two techniques: an atomic exchange with a prepared symlink
// (renameat2 RENAME_EXCHANGE), and rename away / symlink in / unlink /
// rename back. hits counts the times someone else removed the planted link
// (the victim tree's owner found it and unlinked it instead of following it).
type swapper struct {
	victim, hold, spare, target string
	stop                        atomic.Bool
	swaps, hits                 atomic.Int64
	wg                          sync.WaitGroup
}

func (s *swapper) start() {
	s.stop.Store(false)
	s.wg.Go(func() {
		for i := 0; !s.stop.Load(); i++ {
			if i%2 == 0 {
				_ = os.Symlink(s.target, s.spare)
				if unix.Renameat2(unix.AT_FDCWD, s.victim, unix.AT_FDCWD, s.spare, unix.RENAME_EXCHANGE) == nil {
					s.swaps.Add(1)
					runtime.Gosched()
					_ = unix.Renameat2(unix.AT_FDCWD, s.victim, unix.AT_FDCWD, s.spare, unix.RENAME_EXCHANGE)
				}
				runtime.Gosched()
				continue
			}
			if os.Rename(s.victim, s.hold) != nil {
				continue
			}
			if os.Symlink(s.target, s.victim) == nil {
				s.swaps.Add(1)
				runtime.Gosched()
				if err := unix.Unlink(s.victim); errors.Is(err, unix.ENOENT) {
					s.hits.Add(1)
				}
			}
			_ = os.Rename(s.hold, s.victim)
			runtime.Gosched()
		}
	})
}

func (s *swapper) halt() {
	s.stop.Store(true)
	s.wg.Wait()
}

// TestRemoveContentsRacingSymlinkSwapNeverEscapes builds a tree, then removes
// its contents while the adversary swaps a subdirectory of it for a symlink
// to a canary tree outside the root. The canary must survive every round.
func TestRemoveContentsRacingSymlinkSwapNeverEscapes(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		iterations := 2000
		tmp := memDir(t)
		root := filepath.Join(tmp, "root")
		c := newCanary(t, filepath.Join(tmp, "canary"), 8)
		mkdirAll(t, filepath.Join(root, "tree"))
		r := openRoot(t, root)
		tree := filepath.Join(root, "tree")
		adv := &swapper{
			victim: filepath.Join(tree, "a", "sub"),
			hold:   filepath.Join(tmp, "held-away"),
			spare:  filepath.Join(tree, "a", "spare"),
			target: c.dir,
		}
		for range iterations {
			// The adversary is stopped while the tree is built: building
			// uses ordinary path calls, which would follow its links.
			for _, p := range []string{"a/sub/x/y", "a/sub/z", "a/w", "b"} {
				mkdirAll(t, filepath.Join(tree, p))
			}
			for _, p := range []string{"a/sub/x/y/1", "a/sub/x/2", "a/sub/3", "a/sub/z/4", "a/w/5", "b/6", "7"} {
				writeFile(t, filepath.Join(tree, p), "junk")
			}
			d, err := r.OpenDir("tree")
			if err != nil {
				t.Fatal(err)
			}
			adv.start()
			_, _ = d.RemoveContents()
			adv.halt()
			d.Close()
			c.check(t)
			// Reset: whatever the race left (the held-away directory, the
			// spare link, a restored subtree) goes, without following links.
			if err := os.RemoveAll(adv.hold); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(tree); err != nil {
				t.Fatal(err)
			}
			mkdirAll(t, tree)
		}
		c.check(t)
		t.Logf("%d rounds, %d swaps, %d planted links unlinked by RemoveContents", iterations, adv.swaps.Load(), adv.hits.Load())
		if adv.swaps.Load() == 0 {
			t.Fatal("the adversary never swapped: the test proved nothing")
		}
	})
}

// TestRootOpenDirRacingSwapNeverEscapes: root/a flips between a real
// directory and a symlink to a canary outside; OpenDir("a/b") and
// Lstat("a/b") must only ever see the real a/b.
func TestRootOpenDirRacingSwapNeverEscapes(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := memDir(t)
		root := filepath.Join(tmp, "root")
		outside := filepath.Join(tmp, "outside")
		mkdirAll(t, filepath.Join(root, "a", "b"))
		mkdirAll(t, filepath.Join(outside, "b"))
		realB := identityOf(t, filepath.Join(root, "a", "b"))
		outB := identityOf(t, filepath.Join(outside, "b"))
		r := openRoot(t, root)
		adv := &swapper{
			victim: filepath.Join(root, "a"),
			hold:   filepath.Join(root, "a.held"),
			spare:  filepath.Join(root, "a.spare"),
			target: outside,
		}
		adv.start()
		defer adv.halt()
		// At least 20,000 rounds and 2,000 swaps; at most 20 s.
		var opened, refused int
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; i < 20000 || (adv.swaps.Load() < 2000 && time.Now().Before(deadline)); i++ {
			d, err := r.OpenDir("a/b")
			if err == nil {
				id := d.Info().ID
				if st, serr := d.Stat(); serr != nil || st.ID != id {
					t.Fatalf("Stat through the fd disagrees: %+v, %v", st, serr)
				}
				d.Close()
				if id == outB {
					t.Fatalf("round %d: OpenDir(a/b) returned the directory outside the root", i)
				}
				if id != realB {
					t.Fatalf("round %d: OpenDir(a/b) returned an unknown directory %+v", i, id)
				}
				opened++
			} else {
				refused++
			}
			if info, err := r.Lstat("a/b"); err == nil {
				if info.ID == outB || info.ID != realB {
					t.Fatalf("round %d: Lstat(a/b) = %+v, real %+v, outside %+v", i, info.ID, realB, outB)
				}
			}
		}
		adv.halt()
		t.Logf("opened %d, refused %d, %d swaps", opened, refused, adv.swaps.Load())
		if refused == 0 || opened == 0 {
			t.Fatalf("the race never went both ways (opened %d, refused %d): the test proved nothing", opened, refused)
		}
	})
}

// TestDirOpenDirRacingSwapNeverEscapes is the same race one level down,
// against Dir.OpenDir, which the removal walk uses.
func TestDirOpenDirRacingSwapNeverEscapes(t *testing.T) {
	t.Parallel()
	tmp := memDir(t)
	root := filepath.Join(tmp, "root")
	outside := filepath.Join(tmp, "outside")
	mkdirAll(t, filepath.Join(root, "a"))
	mkdirAll(t, outside)
	realA := identityOf(t, filepath.Join(root, "a"))
	r := openRoot(t, root)
	top := openDir(t, r, ".")
	adv := &swapper{victim: filepath.Join(root, "a"), hold: filepath.Join(root, "h"), spare: filepath.Join(root, "s"), target: outside}
	adv.start()
	defer adv.halt()
	opened := 0
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 20000 || (adv.swaps.Load() < 2000 && time.Now().Before(deadline)); i++ {
		d, err := top.OpenDir("a")
		if err != nil {
			continue
		}
		id := d.Info().ID
		d.Close()
		if id != realA {
			t.Fatalf("round %d: Dir.OpenDir(a) opened %+v, want %+v", i, id, realA)
		}
		opened++
	}
	adv.halt()
	t.Logf("opened %d, %d swaps", opened, adv.swaps.Load())
	if adv.swaps.Load() == 0 || opened == 0 {
		t.Fatal("the race never went both ways: the test proved nothing")
	}
}
