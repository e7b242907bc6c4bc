package runner

import (
	"os"
	"path/filepath"
	"time"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// runDirs is one run's private directory with its HOME and TMPDIR.
type runDirs struct{ dir, home, tmp string }

func (r *Runner) makeRunDirs() (runDirs, error) {
	d := filepath.Join(r.runsDir, ids.New("r"))
	rd := runDirs{d, filepath.Join(d, "home"), filepath.Join(d, "tmp")}
	for _, p := range []string{rd.dir, rd.home, rd.tmp} {
		if err := os.Mkdir(p, 0o700); err != nil {
			_ = os.RemoveAll(d)
			return runDirs{}, result.Wrap(result.InternalError, "the private HOME and TMPDIR for the command could not be created", err)
		}
	}
	return rd, nil
}

// takeRunDirs returns a clean pair whose helper is prepared (or kept),
// else one from the pool, else a new one.
func (r *Runner) takeRunDirs() (runDirs, error) {
	select {
	case rd := <-r.primed:
		return rd, nil
	default:
	}
	select {
	case rd := <-r.spare:
		return rd, nil
	default:
		return r.makeRunDirs()
	}
}

// giveBack returns the pair of a run (execute) that has ended. A pair
// whose helper was kept for its next command (sandbox, reuse) and whose
// directories the command left empty (two directory reads, about 6 µs)
// goes straight back among the primed, where the next command takes it:
// back to back, or in bursts of max_concurrent calls, the next command
// comes sooner than any delayed recycling (issue 19: such bursts found no
// primed pair and started helpers on the request path, 5.6 ms of CPU per
// call instead of 1.8). Anything else is recycled, and the next commands'
// helpers prepared, prepareDelay after the answer: doing it now would
// compete with the outcome record's fsync and the reply.
func (r *Runner) giveBack(rd runDirs) {
	defer r.running.Add(-1)
	if rd.dir != "" && !r.closed.Load() && sandbox.Kept(rd.home) && emptyDir(rd.home) && emptyDir(rd.tmp) {
		select {
		case r.primed <- rd:
			rd = runDirs{}
		default:
		}
	}
	r.after.Add(1)
	time.AfterFunc(prepareDelay, func() {
		defer r.after.Done()
		if r.closed.Load() {
			if rd.dir != "" {
				_ = os.RemoveAll(rd.dir)
			}
			return
		}
		r.recycle(rd)
		r.prepare()
	})
}

// emptyInPlace empties dir and gives it back its mode, keeping the
// directory itself: the helper kept for this pair (sandbox, reuse) shows
// this very directory as the next command's HOME or TMPDIR. false: dir is
// not a plain directory of this user any more, or something in it stays;
// the caller then makes it anew (and the kept helper, prepared for the
// old directory, is not used).
func emptyInPlace(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	if fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0o700 && os.Chmod(dir, 0o700) != nil {
		return false
	}
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return false
	}
	for _, n := range names {
		if _, err := jail.PurgeTree(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return emptyDir(dir)
}

// removeRunDir removes dir with sandbox.RemoveRunDir, whatever the run
// left in it, and logs what cannot be removed with its size; that stays
// until this server's Close and the next start try again, and terminald's
// check lists it.
func (r *Runner) removeRunDir(dir string) bool {
	l, ok := sandbox.RemoveRunDir(dir)
	if !ok {
		r.reportLeftover(l)
	}
	return ok
}

// reportLeftover logs a run directory that could not be removed.
func (r *Runner) reportLeftover(l sandbox.Leftover) {
	r.o.Logger.Warn("a run directory could not be removed", "path", l.Path, "bytes", l.Bytes, "reason", l.Reason)
}

// recycle returns a used pair to the pool once it is empty again: whatever
// a run left in its HOME or TMPDIR is removed (removeRunDir: any modes,
// any depth), so nothing reaches the next run. It runs after the answer
// (see execute), never on the request path. Pairs are reused rather than made per run because creating and
// removing directories adds to every journal commit, which the audit
// log's fsync waits for.
func (r *Runner) recycle(rd runDirs) {
	if rd.dir == "" {
		return
	}
	for _, d := range []string{rd.home, rd.tmp} {
		if !emptyDir(d) && !emptyInPlace(d) {
			if !r.removeRunDir(d) || os.Mkdir(d, 0o700) != nil {
				r.removeRunDir(rd.dir)
				return
			}
		}
	}
	if sandbox.Kept(rd.home) {
		// Its helper was kept for the next command (sandbox, reuse): the
		// pair goes straight among the primed, and nothing need be
		// prepared for it.
		select {
		case r.primed <- rd:
			return
		default:
		}
	}
	select {
	case r.spare <- rd:
	default:
		r.removeRunDir(rd.dir)
	}
}

// Prewarm prepares the helpers of the first commands (prepare), so that
// the first command after start-up finds its sandbox ready too.
func (r *Runner) Prewarm() { r.prepare() }

// prepareDelay is how long after a command the next one's helper is
// prepared.
const prepareDelay = 5 * time.Millisecond

// prepare has the sandbox start helpers until primedDepth clean pairs have
// one prepared: each for a clean pair (from the pool, else a new one) that
// it then keeps apart (primed), so that a run takes that very pair and
// finds its namespaces and view ready. A pair put back at the end of the
// pool instead would be taken only after every other spare pair: after a
// burst of parallel calls left several in the pool, no later run matched
// its prepared helper (issue 19). Runs take the primed pairs oldest first,
// so the helper a run finds is the one prepared longest ago.
func (r *Runner) prepare() {
	// One at a time: concurrent fills (the answers of a burst) would
	// prepare more helpers than pairs fit in primed, and the sandbox would
	// end the oldest prepared helper, a primed pair's, to make room.
	r.preparing.Lock()
	defer r.preparing.Unlock()
	// The pairs of runs under way count as primed: each is likely to come
	// back with its helper kept (sandbox, reuse), and preparing helpers
	// for new pairs meanwhile would start more than can be kept.
	for len(r.primed)+int(r.running.Load()) < cap(r.primed) {
		var rd runDirs
		select {
		case rd = <-r.spare:
		default:
			var err error
			if rd, err = r.makeRunDirs(); err != nil {
				return
			}
		}
		sandbox.Prepare(r.spec(rd))
		select {
		case r.primed <- rd:
		default:
			r.recycle(rd) // a concurrent prepare filled the slots
			return
		}
	}
}

// spec is the sandbox.Spec of a run in rd, without its command.
func (r *Runner) spec(rd runDirs) sandbox.Spec {
	return sandbox.Spec{JailRoot: r.o.Root.Path(), TempDir: rd.tmp, HomeDir: rd.home,
		WritePaths: r.o.Caches.Paths, ReadPaths: r.o.ReadPaths, ExecWritable: r.o.Sandboxed,
		PathEnv: r.pathEnv, Net: r.o.Net, ProxySocket: r.o.ProxySocket, Landlock: r.o.Landlock,
		Isolation: r.o.Isolation, Limits: r.o.Limits, Timeout: r.o.Timeout,
		Protect: r.o.Protect, QuarantineDir: filepath.Join(r.o.StateDir, QuarantineDirName)}
}
