package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/internal/fsx"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Leftover is a run directory that could not be removed, with what stays.
type Leftover struct {
	// Path is the directory's absolute path.
	Path string
	// Bytes is the disk usage of what stays in it.
	Bytes int64
	// Reason names the first entry that stayed and why (empty from
	// LeftoverRuns, which removes nothing).
	Reason string
}

// RemoveRunDir removes a run directory (a private HOME/TMPDIR pair, or a
// server's whole runs directory) with jail.PurgeTree, whatever modes and
// depth its command left in it, and returns what stays, if anything.
func RemoveRunDir(dir string) (Leftover, bool) {
	left, err := jail.PurgeTree(dir)
	if err == nil {
		return Leftover{}, true
	}
	return Leftover{Path: dir, Bytes: left.Bytes, Reason: result.Reason(err)}, false
}

// runsLock is the lock file of a claimed runs directory.
const runsLock = ".lock"

// ClaimRunsDir gives one server process its own directory beneath base for
// the private HOME/TMPDIR pairs of its commands, held by an exclusive lock
// on a file inside it for as long as the process lives. Directories of
// server processes that are gone (their lock is free: a server killed with
// SIGKILL, a power loss) are removed first, with whatever their commands
// left in them; directories of live servers sharing base are left alone.
// release removes the claimed directory and drops the lock.
//
// Removal is RemoveRunDir's: whatever modes and depth the commands left,
// it goes. What still cannot be removed (an immutable file, a mount, a
// file of another user) is passed to report (when not nil) with its size,
// at the claim for dead servers' directories and at release for this
// one's; the next claim tries again.
//
// It refuses (INTERNAL_ERROR) only when base or the claimed directory
// cannot be created or locked. Where fsx cannot lock (no flock), it claims
// a directory and removes nothing (see lockFile).
func ClaimRunsDir(base string, report func(Leftover)) (dir string, release func(), err error) {
	if report == nil {
		report = func(Leftover) {}
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", nil, result.Wrap(result.InternalError, "the state directory's runs/ cannot be created", err)
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "i-") {
			continue
		}
		old := filepath.Join(base, e.Name())
		if unlock, ok := lockFile(filepath.Join(old, runsLock)); ok {
			// Abandoned: its server is gone.
			if l, ok := RemoveRunDir(old); !ok {
				report(l)
			}
			unlock()
		}
	}
	dir = filepath.Join(base, ids.New("i"))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, result.Wrap(result.InternalError, "the server's runs directory cannot be created", err)
	}
	unlock, ok := lockFile(filepath.Join(dir, runsLock))
	if !ok && fsx.CanLock {
		_ = os.RemoveAll(dir)
		return "", nil, result.New(result.InternalError, "the server's runs directory cannot be locked")
	}
	return dir, func() {
		if l, ok := RemoveRunDir(dir); !ok {
			report(l)
		}
		if unlock != nil {
			unlock()
		}
	}, nil
}

// LeftoverRuns lists the directories beneath base (a state directory's
// runs/) of server processes that are gone, with the disk usage of each
// (jail.MeasureTree): what the last server to start could not remove, or
// what a server that died since left. It changes nothing; the next
// ClaimRunsDir removes what it can. Directories of live servers are left
// out, and so is everything where fsx cannot lock.
func LeftoverRuns(base string) []Leftover {
	var out []Leftover
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "i-") {
			continue
		}
		old := filepath.Join(base, e.Name())
		// The lock file is opened, never created: a check changes nothing.
		f, err := os.OpenFile(filepath.Join(old, runsLock), os.O_RDWR, 0)
		switch {
		case err == nil:
			if !fsx.CanLock || fsx.TryLock(f) != nil {
				f.Close()
				continue // a live server's, or cannot tell
			}
		case !errors.Is(err, fs.ErrNotExist):
			continue
		}
		// No lock file (removed with the rest of what could be), or a free
		// one: its server is gone.
		u, _ := jail.MeasureTree(old)
		if f != nil {
			f.Close()
		}
		out = append(out, Leftover{Path: old, Bytes: u.Bytes})
	}
	return out
}

// lockFile takes the exclusive flock on path (creating it) without waiting,
// and reports whether it got it. The lock lives as long as the returned
// unlock has not been called: a process that dies drops it. Where fsx
// cannot lock (fsx.CanLock is false) it never reports a lock free, so
// ClaimRunsDir removes no other server's directory (abandoned ones stay
// until removed by hand) and its own claim is not locked.
func lockFile(path string) (unlock func(), ok bool) {
	if !fsx.CanLock {
		return nil, false
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false
	}
	if fsx.TryLock(f) != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
