package terminal

import (
	"os"
	"path/filepath"
	"time"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// runDirs is one run's private directory with its HOME and TMPDIR.
type runDirs struct{ dir, home, tmp string }

func (s *Server) makeRunDirs() (runDirs, error) {
	d := filepath.Join(s.runsDir, ids.New("r"))
	rd := runDirs{d, filepath.Join(d, "home"), filepath.Join(d, "tmp")}
	for _, p := range []string{rd.dir, rd.home, rd.tmp} {
		if err := os.Mkdir(p, 0o700); err != nil {
			_ = os.RemoveAll(d)
			return runDirs{}, result.Wrap(result.InternalError, "the private HOME and TMPDIR for the command could not be created", err)
		}
	}
	return rd, nil
}

// takeRunDirs returns a clean pair from the pool, or a new one.
func (s *Server) takeRunDirs() (runDirs, error) {
	select {
	case rd := <-s.spare:
		return rd, nil
	default:
		return s.makeRunDirs()
	}
}

// emptyDir reports whether dir exists as a directory with no entries.
func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return err != nil && len(names) == 0
}

// recycle returns a used pair to the pool once it is empty again: whatever
// a run left in its HOME or TMPDIR is removed, so nothing reaches the next
// run. Pairs are reused rather than made per run because creating and
// removing directories adds to every journal commit, which the audit
// log's fsync waits for.
func (s *Server) recycle(rd runDirs) {
	if rd.dir == "" {
		return
	}
	for _, d := range []string{rd.home, rd.tmp} {
		if !emptyDir(d) {
			if os.RemoveAll(d) != nil || os.Mkdir(d, 0o700) != nil {
				_ = os.RemoveAll(rd.dir)
				return
			}
		}
	}
	select {
	case s.spare <- rd:
	default:
		_ = os.RemoveAll(rd.dir)
	}
}

// Prewarm makes a private directory pair and prepares a helper for it, so
// that the first command after start-up finds its sandbox ready too.
func (s *Server) Prewarm() {
	rd, err := s.makeRunDirs()
	if err != nil {
		return
	}
	select {
	case s.spare <- rd:
		s.prepare()
	default:
		_ = os.RemoveAll(rd.dir)
	}
}

// prepareDelay is how long after a command the next one's helper is
// prepared.
const prepareDelay = 5 * time.Millisecond

// prepare has the sandbox start the next command's helper now, for the
// private directories the next run will most likely take, so that its
// namespaces and view are ready when the command arrives.
func (s *Server) prepare() {
	select {
	case rd := <-s.spare:
		sandbox.Prepare(s.spec(rd))
		select {
		case s.spare <- rd:
		default:
			_ = os.RemoveAll(rd.dir)
		}
	default:
	}
}

// spec is the sandbox.Spec of a run in rd, without its command.
func (s *Server) spec(rd runDirs) sandbox.Spec {
	return sandbox.Spec{JailRoot: s.o.Root.Path(), TempDir: rd.tmp, HomeDir: rd.home,
		WritePaths: s.o.Caches.Paths, ReadPaths: s.o.ReadPaths, ExecWritable: s.o.Sandboxed,
		PathEnv: s.pathEnv, Net: s.o.Net, ProxySocket: s.o.ProxySocket, Landlock: s.o.Landlock,
		Isolation: s.o.Isolation, Limits: s.o.Limits, Timeout: s.o.Timeout}
}
