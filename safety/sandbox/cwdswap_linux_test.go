package sandbox

import (
	"context"
	"errors"
	"fmt"
	"github.com/bastion-mcp/bastion/safety/testfs"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// cwdSwapRuns is how many commands each isolation starts while the
// working directory is being swapped.
const cwdSwapRuns = 200

// cwdSwapMinSwaps is how many times the adversary must have swapped the
// link in before the runs stop.
const cwdSwapMinSwaps = 2000

// cwdSwapMore bounds the time spent on starts beyond cwdSwapRuns.
const cwdSwapMore = 10 * time.Second

// TestAttackWorkingDirectorySwappedForSymlinkDuringStart races Run's
// handling of Spec.Dir. While commands are started one after another with
// Dir = jail/work, an adversary goroutine (standing for another process of
// the user, or an earlier command, that can rename entries in the jail)
// swaps jail/work, thousands of times, between the real directory and a
// symbolic link to a directory outside the jail, in a tight loop: by
// atomic exchange (renameat2 RENAME_EXCHANGE) and by the plain rename
// dance that also leaves moments with no jail/work at all.
//
// The outside directory is one the command may write (a WritePaths tree),
// so neither Landlock nor the namespaces' view would stop a marker written
// there: only the working-directory checks (the server's open beneath the
// jail without symbolic links, and the helper's re-open and identity check
// in its view) stand between the swap and an escape.
//
// Each command writes marker-<run> into its working directory. Proof,
// taken on the host: the outside directory never receives a marker; every
// marker on disk is in the real work directory and belongs to a run that
// Run reported as having run; every run that ran left its marker there;
// every other run was refused with STALE, NOT_FOUND or PATH_ESCAPE and
// left no marker anywhere. A mutant that opens the directory following
// symbolic links (on the server or in the helper, without the identity
// check) fails this test in both isolations with a dozen or more markers
// outside.
//
// Each isolation makes at least cwdSwapRuns starts, and goes on until the
// adversary has swapped cwdSwapMinSwaps times; most starts are refused at
// once (the link or nothing is in place), some run, and some are refused
// by the helper after the server's check passed (STALE): the window
// between the two checks is hit. The counts are logged; that some runs
// were refused is not required, only that some ran.
func TestAttackWorkingDirectorySwappedForSymlinkDuringStart(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			t.Parallel()
			cwdSwapAttack(t, iso)
		})
	}
}

func cwdSwapAttack(t *testing.T, iso Isolation) {
	base := t.TempDir()
	jail, tmp, home := filepath.Join(base, "jail"), filepath.Join(base, "tmp"), filepath.Join(base, "home")
	away := filepath.Join(base, "away") // outside the jail, writable by the command
	work := filepath.Join(jail, "work")
	for _, d := range []string{jail, tmp, home, away, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The real work directory's identity, to check that the adversary
	// left it in place.
	var realSt unix.Stat_t
	if err := unix.Stat(work, &realSt); err != nil {
		t.Fatal(err)
	}
	// The symbolic link that takes the place of jail/work.
	const linkName, parkName = ".swap-link", ".swap-real"
	if err := os.Symlink(away, filepath.Join(jail, linkName)); err != nil {
		t.Fatal(err)
	}
	jfd, err := unix.Open(jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(jfd)

	// The adversary. Every round swaps the link in and the real directory
	// back, so jail/work is the real directory again at the end of it.
	// How long each state lasts is chosen at random each round: the link
	// mostly for no time at all or a few microseconds, sometimes for a
	// yield or a sleep of up to 2 ms (long enough to span a whole start);
	// the real directory for no time, a yield, a spin or a sleep of up to
	// a millisecond. That way the swaps land at every point of a start:
	// before the server opens the directory, between that and the
	// helper's re-open in its view, and after. (A link left in place
	// longer every time would only make every start fail at the first
	// check, which proves less.)
	var stop atomic.Bool
	var swaps, exchanges, dances atomic.Int64
	var advErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5ca1ab1e))
		spin := func(max time.Duration) {
			for d, t0 := time.Duration(rng.Int64N(int64(max))), time.Now(); time.Since(t0) < d; {
			}
		}
		linkDwell := func() {
			switch rng.IntN(8) {
			case 0, 1, 2: // back to back
			case 3, 4, 5:
				spin(50 * time.Microsecond)
			case 6:
				runtime.Gosched()
			case 7:
				time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
			}
		}
		dirDwell := func() {
			switch rng.IntN(4) {
			case 0: // back to back
			case 1:
				runtime.Gosched()
			case 2:
				spin(300 * time.Microsecond)
			case 3:
				time.Sleep(time.Duration(rng.Int64N(int64(time.Millisecond))))
			}
		}
		useExchange := true
		for i := 0; !stop.Load(); i++ {
			if useExchange && i%2 == 0 {
				// Atomic: jail/work is always the directory or the link.
				if err := unix.Renameat2(jfd, "work", jfd, linkName, unix.RENAME_EXCHANGE); err != nil {
					if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
						useExchange = false // the filesystem cannot exchange; dance only
						continue
					}
					advErr = err
					return
				}
				swaps.Add(1)
				linkDwell()
				if err := unix.Renameat2(jfd, "work", jfd, linkName, unix.RENAME_EXCHANGE); err != nil {
					advErr = err
					return
				}
				exchanges.Add(1)
			} else {
				// The dance, with moments where jail/work does not exist:
				// work -> parked; link -> work; work -> link; parked -> work.
				for _, mv := range [][2]string{{"work", parkName}, {linkName, "work"}, {"work", linkName}, {parkName, "work"}} {
					if err := unix.Renameat(jfd, mv[0], jfd, mv[1]); err != nil {
						advErr = err
						return
					}
					if mv[0] == linkName {
						swaps.Add(1)
						linkDwell()
					}
				}
				dances.Add(1)
			}
			dirDwell()
		}
	}()
	stopAdversary := func() {
		if !stop.Swap(true) {
			wg.Wait()
		}
	}
	defer stopAdversary()
	// Let the adversary get going before the first run.
	for deadline := time.Now().Add(2 * time.Second); swaps.Load() < 100 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}

	sh := lookPath(t, "sh")
	ran := map[int]bool{}
	counts := map[string]int{}
	var unexpected []string
	start := time.Now()
	// cwdSwapRuns starts at least, and more (for up to cwdSwapMore) until
	// the adversary has swapped cwdSwapMinSwaps times and some run has
	// run: the adversary's timing can starve the runs of the moments with
	// the real directory in place, and a test where nothing ran, or the
	// directory hardly moved, proves nothing.
	runs := 0
	for i := 0; ; i++ {
		if i >= cwdSwapRuns && ((len(ran) > 0 && swaps.Load() >= cwdSwapMinSwaps) || time.Since(start) > cwdSwapMore) {
			break
		}
		runs++
		var stdout, stderr testfs.SyncBuffer
		s := Spec{
			Path: sh, Argv: []string{"sh", "-c", `echo x > "marker-$1"`, "sh", strconv.Itoa(i)},
			Dir: work, JailRoot: jail, TempDir: tmp, HomeDir: home, WritePaths: []string{away},
			PathEnv: testPATH, Landlock: ModeRequired, Isolation: iso, Timeout: 10 * time.Second,
			Stdout: &stdout, Stderr: &stderr,
		}
		out, err := Run(context.Background(), s)
		switch code := result.CodeOf(err); {
		case err == nil && out.ExitCode == 0:
			ran[i] = true
			counts["ran"]++
		case err == nil:
			counts["ran-but-failed"]++
			unexpected = append(unexpected, fmt.Sprintf("run %d: started but exited %d (stderr %q)", i, out.ExitCode, stderr.String()))
		case code == result.Stale || code == result.NotFound || code == result.PathEscape:
			counts[string(code)]++
		default:
			counts["other:"+string(code)]++
			unexpected = append(unexpected, fmt.Sprintf("run %d: %s: %v", i, code, err))
		}
	}
	elapsed := time.Since(start)
	stopAdversary()
	if advErr != nil {
		t.Fatalf("the adversary failed, so the attack did not run as intended: %v", advErr)
	}

	// The adversary ended every round with the real directory at jail/work.
	var st unix.Stat_t
	if err := unix.Lstat(work, &st); err != nil || st.Dev != realSt.Dev || st.Ino != realSt.Ino {
		t.Fatalf("jail/work is not the real work directory after the attack (%v)", err)
	}

	// Every marker anywhere in the test's tree, by where it is.
	var markers []string
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "marker-") {
			markers = append(markers, p)
		}
		return nil
	})
	found := map[int]bool{}
	for _, m := range markers {
		if dir := filepath.Dir(m); dir != work {
			t.Errorf("a marker was written outside the real work directory: %s", m)
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), "marker-"))
		if err != nil {
			t.Errorf("unexpected marker %s", m)
			continue
		}
		found[n] = true
		if !ran[n] {
			t.Errorf("run %d left a marker but Run did not report it as having run", n)
		}
	}
	if awayEntries, err := os.ReadDir(away); err != nil || len(awayEntries) != 0 {
		t.Errorf("the directory outside the jail received %d entries (%v): the working directory escaped", len(awayEntries), err)
	}
	for n := range ran {
		if !found[n] {
			t.Errorf("run %d ran but its marker is not in the real work directory", n)
		}
	}
	for _, u := range unexpected {
		t.Errorf("unexpected outcome: %s", u)
	}

	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary []string
	for _, k := range keys {
		summary = append(summary, k+"="+strconv.Itoa(counts[k]))
	}
	refused := counts[string(result.Stale)] + counts[string(result.NotFound)] + counts[string(result.PathEscape)]
	t.Logf("%s: %d runs in %v while the adversary swapped jail/work for a symbolic link %d times (%d exchange rounds, %d rename dances): %s",
		iso, runs, elapsed.Round(time.Millisecond), swaps.Load(), exchanges.Load(), dances.Load(), strings.Join(summary, " "))
	if swaps.Load() < cwdSwapMinSwaps {
		t.Errorf("the adversary swapped only %d times in %d runs: the race was hardly run", swaps.Load(), runs)
	}
	if len(ran) == 0 {
		t.Errorf("no run ran at all: the test cannot tell a working sandbox from one that refuses everything")
	}
	if refused == 0 {
		t.Logf("note: no run was refused this time; the swap never landed inside a start (not a failure)")
	}
}
