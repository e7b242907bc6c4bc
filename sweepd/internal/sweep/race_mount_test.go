package sweep

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestRacingSwapAdversaryNeverEscapes races reclaim against a goroutine
// that swaps the artifact for a symlink to a canary tree outside the root
// and back, in a tight loop. Half the iterations swap with two renames (the
// name briefly missing), half with one atomic RENAME_EXCHANGE.
func TestRacingSwapAdversaryNeverEscapes(t *testing.T) {
	e := newEnvOnTmpfs(t)
	canary := filepath.Join(e.outside, "canary")
	check := canaryTree(t, canary)
	const iterations, batch = 2000, 25
	codes := map[string]int{}
	var odd []string
	for round := 0; round < iterations/batch; round++ {
		// A batch of fresh projects, scanned once; each find then gets its
		// own race.
		for j := range batch {
			nodeProject(t, filepath.Join(e.root, "p"+itoa(int64(j))))
		}
		s := e.scanOK(nil)
		if len(s.Finds) != batch {
			t.Fatalf("round %d: %d finds", round, len(s.Finds))
		}
		for k, f := range s.Finds {
			i := round*batch + k
			proj := filepath.Dir(f.Path)
			nm := f.Path
			// aside holds the symlink to the canary while the real
			// directory is in place, and the real directory while the
			// symlink is in place.
			aside := filepath.Join(proj, "aside")
			if err := os.Symlink(canary, aside); err != nil {
				t.Fatal(err)
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			exchange := i%2 == 0
			go func() {
				defer wg.Done()
				tmp := filepath.Join(proj, "tmp")
				for !stop.Load() {
					if exchange {
						_ = unix.Renameat2(unix.AT_FDCWD, nm, unix.AT_FDCWD, aside, unix.RENAME_EXCHANGE)
						continue
					}
					// nm -> tmp, aside -> nm, tmp -> aside: the name is
					// briefly missing in between.
					if os.Rename(nm, tmp) == nil {
						_ = os.Rename(aside, nm)
						_ = os.Rename(tmp, aside)
					}
				}
			}()
			r, d := e.reclaim(map[string]any{"ids": []string{f.ID}, "confirm": "delete"})
			stop.Store(true)
			wg.Wait()
			o := oneOutcome(t, d)
			if o.Code != r.Code {
				t.Fatalf("race %d: result %s, per id %s", i, r.Code, o.Code)
			}
			codes[o.Code]++
			if o.Code != "OK" && o.Code != "STALE" && len(odd) < 5 {
				odd = append(odd, o.Code+" ("+o.Reason+")")
			}
			// The canary survives every single race, whatever the outcome.
			check()
		}
		for j := range batch {
			if err := os.RemoveAll(filepath.Join(e.root, "p"+itoa(int64(j)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("outcomes over %d races: %v", iterations, codes)
	if len(odd) > 0 {
		// A lost race must read STALE: the find changed under the reclaim.
		t.Errorf("outcomes %v: codes other than OK and STALE, e.g. %q", codes, odd)
	}
	if codes["OK"] == 0 || codes["STALE"] == 0 {
		// Both outcomes must occur, or the adversary never raced anything.
		t.Fatalf("outcomes %v: the race was not exercised", codes)
	}
}

func TestMountInsideRootIsNotCrossed(t *testing.T) {
	e := newEnv(t)
	// A tmpfs mounted inside the root, holding a project.
	mnt := filepath.Join(e.root, "mnt")
	mountTmpfs(t, mnt)
	nodeProject(t, filepath.Join(mnt, "proj"))
	// A tmpfs mounted at the artifact directory itself.
	atNM := filepath.Join(e.root, "proj", "node_modules")
	testfs.Write(t, filepath.Join(e.root, "proj", "package.json"), "{}")
	mountTmpfs(t, atNM)
	testfs.Write(t, filepath.Join(atNM, "on-the-mount.js"), "x")
	// A bind mount of an outside canary at an artifact.
	canary := filepath.Join(e.outside, "canary")
	check := canaryTree(t, canary)
	bound := filepath.Join(e.root, "bound", "node_modules")
	testfs.Write(t, filepath.Join(e.root, "bound", "package.json"), "{}")
	mkdir(t, bound)
	if err := unix.Mount(canary, bound, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, bound) })
	normal := nodeProject(t, filepath.Join(e.root, "normal"))

	s := e.scanOK(nil)
	noFindUnder(t, s, mnt)
	noFindUnder(t, s, atNM)
	noFindUnder(t, s, bound)
	if len(s.Finds) != 1 || s.Finds[0].Path != normal {
		t.Fatalf("want only normal/node_modules, got %v", paths(s))
	}
	for _, c := range []pathCase{
		{"the mount", "mnt"}, {"inside the mount", "mnt/proj"}, {"a find inside the mount", mnt + "/proj/node_modules"},
		{"a find that is a mount", "proj/node_modules"}, {"a find in a bind mount", "bound/node_modules"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, e.call("scan", map[string]any{"path": c.path}), "PATH_ESCAPE")
		})
	}

	// A find that becomes a mount point after the scan: a tmpfs over it,
	// or the canary bound onto it.
	a := nodeProject(t, filepath.Join(e.root, "a"))
	b := nodeProject(t, filepath.Join(e.root, "b"))
	c := nodeProject(t, filepath.Join(e.root, "c"))
	s = e.scanOK(nil)
	fa, fb, fc := findAt(t, s, a), findAt(t, s, b), findAt(t, s, c)
	mountTmpfs(t, a)
	testfs.Write(t, filepath.Join(a, "tmpfs-file"), "on the tmpfs")
	if err := unix.Mount(canary, b, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, b) })
	// A mount inside the find: the find itself is fine, the mount is left in place.
	inner := filepath.Join(c, "inner-mount")
	mkdir(t, inner)
	if err := unix.Mount(canary, inner, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, inner) })

	r, d := e.reclaim(map[string]any{"ids": []string{fa.ID, fb.ID, fc.ID}, "confirm": "delete"})
	if r.OK {
		t.Fatalf("reclaim across mounts reported OK: %s", r.Detail)
	}
	for i, want := range []string{"STALE", "STALE"} {
		if d.Results[i].Code != want {
			t.Fatalf("%s: %s (%s), want %s", d.Results[i].Path, d.Results[i].Code, d.Results[i].Reason, want)
		}
	}
	if d.Results[2].Code == "OK" {
		t.Fatalf("a find holding a mount point reported OK: %+v", d.Results[2])
	}
	mustExist(t, filepath.Join(a, "tmpfs-file"))
	check()
	mustExist(t, filepath.Join(inner, "precious.txt"))
	// Under the tmpfs, the original contents are still there.
	unmount(t, a)
	mustExist(t, filepath.Join(a, "left-pad", "index.js"))
}
