package jail

import (
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Refusals of the move primitives (Mover, MkdirAll, RemoveEmptyDir).
var (
	ErrOccupied     = result.New(result.PolicyDenied, "the destination already exists; nothing is ever overwritten or renamed around")
	ErrDirNoReplace = result.New(result.OperationFailed, "this filesystem cannot move a directory without the risk of overwriting, so the directory was not moved")
	ErrChanged      = result.New(result.Stale, "the file is no longer the one that was checked (identity, size or modification time changed)")
	ErrNotEmpty     = result.New(result.OperationFailed, "the directory is not empty, so it was left in place")
)

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
