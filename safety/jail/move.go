package jail

import (
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// MoveGuarantee describes how this build moves files, for startup messages
// and docs: renameat2(RENAME_NOREPLACE) on Linux, link+remove through
// os.Root elsewhere.
const MoveGuarantee = moveGuarantee

// Refusals of the move primitives (Mover, MkdirAll, RemoveEmptyDir).
var (
	ErrOccupied     = result.New(result.PolicyDenied, "the destination already exists; nothing is ever overwritten or renamed around")
	ErrDirNoReplace = result.New(result.OperationFailed, "this filesystem cannot move a directory without the risk of overwriting, so the directory was not moved")
	ErrChanged      = result.New(result.Stale, "the file is no longer the one that was checked (identity, size or modification time changed)")
	ErrNotEmpty     = result.New(result.OperationFailed, "the directory is not empty, so it was left in place")
)

// Mover moves objects beneath one root. It keeps the parent directories it
// has opened (each opened anchored, never through a symlink, never across a
// mount) for the life of the Mover, and remembers which ones changed so that
// Sync can fsync them in one pass. A Mover is not for concurrent use.
//
// Moves never overwrite. On Linux the kernel refuses an existing destination
// (renameat2 RENAME_NOREPLACE). On a filesystem without that flag (EINVAL) a
// regular file is moved by linkat, which also refuses an existing name, then
// unlinkat of the source; a directory is refused (ErrDirNoReplace). The
// source is checked against the expected FileState through its parent fd
// right before the rename, and the destination is checked again right after:
// if the name was swapped between the two (an adversary inside the root),
// the object is moved back and the move reports ErrChanged. A crash between
// linkat and unlinkat leaves the same file under both names; see
// RemoveLinkedName.
//
// Off Linux a Mover works through os.Root: a regular file is moved with
// Root.Link, which refuses an existing name, then Root.Remove of the source;
// a directory is moved with Root.Rename after checking that the destination
// is free, which leaves a window in which a racing writer's object could be
// replaced. Symlinks inside the root are followed by os.Root in parent
// components, and Sync does nothing (see MoveGuarantee).
type Mover struct {
	r     *Root
	dirs  map[string]*Dir // open parent directories, by root-relative path (Linux)
	dirty map[string]bool // directories changed since the last Sync (Linux)
}

// NewMover returns a Mover for r. Close it when done.
func (r *Root) NewMover() *Mover {
	return &Mover{r: r, dirs: map[string]*Dir{}, dirty: map[string]bool{}}
}

// Move renames the object at src to dst (both cleaned root-relative paths)
// if src is still want. dst's parent must exist (see MkdirAll). Nothing is
// fsync'd: call Sync before relying on the move surviving a power loss.
func (m *Mover) Move(src, dst string, want FileState) error {
	_, sb := Split(src)
	_, db := Split(dst)
	if err := CheckName(sb); err != nil {
		return err
	}
	if err := CheckName(db); err != nil {
		return err
	}
	return m.move(src, dst, want)
}

// Sync fsyncs every directory whose entries this Mover changed since the
// last Sync (a no-op off Linux).
func (m *Mover) Sync() error { return m.sync() }

// Close releases the directories the Mover opened.
func (m *Mover) Close() error { return m.close() }

// MkdirAll creates the directory rel and any missing parents, one component
// at a time: an existing component that is a symlink or a file is refused,
// never followed (on Linux, a mount point too, through anchored directory
// fds). It returns the directories it created, outermost first; on Linux
// each created directory's parent is fsync'd first.
func (r *Root) MkdirAll(rel string) (created []string, err error) { return r.mkdirAll(rel) }

// RemoveEmptyDir removes the directory rel if it is empty (rmdir never
// removes contents; ErrNotEmpty otherwise) and, on Linux, fsyncs its
// parent. A symlink at rel is refused.
func (r *Root) RemoveEmptyDir(rel string) error { return r.removeEmptyDir(rel) }

// RemoveLinkedName removes the name rel only when rel and twin are two names
// of the same regular file with identity want: the state an interrupted
// linkat+unlinkat move leaves behind. It never removes the last name of a
// file.
func (r *Root) RemoveLinkedName(rel, twin string, want Identity) error {
	return r.removeLinkedName(rel, twin, want)
}

// SyncDir fsyncs the directory rel, opened anchored (a no-op off Linux).
func (r *Root) SyncDir(rel string) error { return r.syncDir(rel) }

// FileState is what a move re-checks right before it acts: the object's
// identity, its type, and for a regular file its size and modification time.
type FileState struct {
	ID      Identity  `json:"id"`
	Dir     bool      `json:"dir,omitempty"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// StateOf returns the FileState of an lstat.
func StateOf(i Info) FileState {
	return FileState{ID: i.ID, Dir: i.IsDir(), Size: i.Size, ModTime: i.ModTime}
}

// Matches reports whether i is still the object s describes. A directory is
// compared by identity and type only (its size and mtime follow its
// contents); a regular file also by size and modification time. Anything
// else (a symlink, a special file) never matches.
func (s FileState) Matches(i Info) bool {
	if s.Dir {
		return i.IsDir() && i.ID == s.ID
	}
	return i.IsRegular() && i.ID == s.ID && i.Size == s.Size && i.ModTime.Equal(s.ModTime)
}

// check turns a mismatch into the refusal that says what it is.
func (s FileState) check(i Info) error {
	if i.IsSymlink() {
		return ErrSymlink
	}
	if !s.Matches(i) {
		return ErrChanged
	}
	return nil
}
