package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/internal/fsx"
	"github.com/bastion-mcp/bastion/safety/result"
)

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
// It refuses (INTERNAL_ERROR) only when base or the claimed directory
// cannot be created or locked. Where fsx cannot lock (no flock), it claims
// a directory and removes nothing (see lockFile).
func ClaimRunsDir(base string) (dir string, release func(), err error) {
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
			_ = os.RemoveAll(old) // abandoned: its server is gone
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
		_ = os.RemoveAll(dir)
		if unlock != nil {
			unlock()
		}
	}, nil
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
