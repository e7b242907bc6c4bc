// Package jail performs filesystem operations anchored beneath a root
// directory that the operator fixed at startup.
//
// # The API
//
// OpenRoot opens the operator's root once. A path from a request goes
// through Root.Clean (or the package function Clean), which refuses ".."
// that leaves the root, absolute paths elsewhere and names with control
// characters, and returns it relative to the root. Everything else takes
// such a cleaned relative path:
//
//   - Root.OpenDir, Root.OpenFile and Root.Lstat reach one object beneath
//     the root; a Dir then reads (ReadDir, Lstat, Usage) and opens its
//     children (OpenDir) by name, never by path.
//   - Root.Verify re-checks a directory found earlier (its Identity, its
//     markers, a .bastion-keep file) and Root.RemoveTree deletes it through
//     the verified directory: see remove.go and Guard.
//   - A Mover (Root.NewMover) moves files and directories without ever
//     overwriting, after re-checking each source's FileState; Root.MkdirAll,
//     Root.RemoveEmptyDir and Root.RemoveLinkedName complete it: see move.go.
//
// Every refusal is a *result.Error sentinel declared in this package
// (ErrEscape, ErrSymlink, ErrMount, ...), so callers test with errors.Is and
// clients see only its code and reason. An OS error becomes a refusal by
// identity (ENOENT is ErrNotFound) while its reason comes from result's one
// errno table.
//
// # The boundary
//
// On Linux every path is resolved relative to an open directory fd with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|
// RESOLVE_NO_XDEV): the package refuses to follow a symbolic link anywhere in
// a path, refuses ".." or absolute paths that leave the root, refuses to
// cross into another mount, and refuses names with NUL bytes, control
// characters or invalid UTF-8. Objects are compared by identity (device,
// inode), never by name, and recursive removal happens through the directory
// fd that was verified, so a path swapped after a check cannot redirect it.
//
// Elsewhere the package falls back to os.Root, which keeps ".." and absolute
// paths from escaping but follows symlinks that stay inside the root and does
// not stop at mount points; identity is best effort. The docs state this
// weaker guarantee, and Guarantee and MoveGuarantee name the one this build
// enforces.
//
// The exported API and its documentation live in this file (and in move.go
// and remove.go for those concepts); jail_linux.go, jail_other.go,
// move_linux.go and move_other.go hold only the unexported implementations
// they call, as os/root.go does for os/root_unix.go.
package jail

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/safety/result"
)

// MaxPathLen is the longest path the jail accepts from a request.
const MaxPathLen = 4096

// Sentinel refusals. They match with errors.Is by identity: a refusal the
// jail made from one (around an OS error, or with a more specific reason)
// matches it on every platform, and an *Error that merely has the same words
// does not (see result.Error).
var (
	ErrEscape      = result.New(result.PathEscape, "the path leaves the root")
	ErrSymlink     = result.New(result.PathEscape, "the path goes through a symbolic link, which is never followed")
	ErrMount       = result.New(result.PathEscape, "the path crosses into another mount, which is never entered")
	ErrBadName     = result.New(result.InvalidRequest, "the path contains a NUL byte, a control character or invalid UTF-8")
	ErrTooLong     = result.New(result.InvalidRequest, "the path is too long")
	ErrEmpty       = result.New(result.InvalidRequest, "the path is empty")
	ErrNotDir      = result.New(result.NotFound, "the path is not a directory")
	ErrNotFound    = result.New(result.NotFound, "no such file or directory")
	ErrIdentity    = result.New(result.Stale, "the object at this path is no longer the one that was checked")
	ErrRootSymlink = result.New(result.PolicyDenied, "a root must not be a symbolic link")
	ErrRootNotDir  = result.New(result.PolicyDenied, "a root must be an existing directory")
	ErrRootInvalid = result.New(result.InvalidRequest, "a root must be an absolute path without control characters")
)

// Guarantee describes the boundary this build enforces, for startup messages
// and docs: openat2 anchored resolution on Linux, the os.Root fallback
// elsewhere.
const Guarantee = guarantee

// Root is an open, canonical root directory. Its methods take paths cleaned
// by Clean, relative to the root ("." is the root itself).
type Root struct {
	dir  *Dir
	path string
}

// Dir is an open directory, reached without following any symlink (on
// Linux; see Guarantee). Each Dir has its own directory offset; one Dir is
// not for concurrent ReadDir, Usage or RemoveContents calls (open another
// Dir instead).
type Dir struct {
	dirHandle        // the open directory: an fd on Linux, an os.Root elsewhere
	rel       string // relative to its Root, for messages
	info      Info
}

// OpenRoot opens the operator's root directory. The path must be absolute,
// exist, be a directory and not itself be a symlink; symlinks in its parent
// components are resolved once, here, to give the canonical path.
func OpenRoot(path string) (*Root, error) {
	if path == "" || !filepath.IsAbs(path) || badText(path) {
		return nil, ErrRootInvalid
	}
	path = filepath.Clean(path)
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, ErrRootNotDir
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, ErrRootSymlink
	}
	if !fi.IsDir() {
		return nil, ErrRootNotDir
	}
	canon, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, ErrRootNotDir
	}
	return openCanonical(canon, fi)
}

// Path returns the canonical absolute path of the root.
func (r *Root) Path() string { return r.path }

// Identity returns the root directory's identity (zero on Windows).
func (r *Root) Identity() Identity { return r.dir.info.ID }

// Close releases the root.
func (r *Root) Close() error { return r.dir.Close() }

// Clean validates p against this root (see the package function Clean).
func (r *Root) Clean(p string) (string, error) { return Clean(r.path, p) }

// OpenDir opens the directory rel (a cleaned relative path, "." for the root)
// anchored beneath the root. On Linux a symlink anywhere in rel, a path that
// leaves the root and a path into another mount are all refused with
// PATH_ESCAPE (ErrSymlink, ErrEscape, ErrMount); see Guarantee for what the
// fallback refuses. Each call returns a Dir with its own directory offset.
func (r *Root) OpenDir(rel string) (*Dir, error) { return r.openDir(rel) }

// OpenFile opens the regular file rel anchored beneath the root, read-only
// and without blocking; anything but a regular file is refused.
func (r *Root) OpenFile(rel string) (*os.File, error) { return r.openFile(rel) }

// Lstat returns the lstat of rel without following a symlink at its end;
// its parent components are resolved anchored.
func (r *Root) Lstat(rel string) (Info, error) {
	if rel == "." || rel == "" {
		return r.dir.info, nil
	}
	return r.lstat(rel)
}

// Rel returns the directory's path relative to its root.
func (d *Dir) Rel() string { return d.rel }

// Info returns the stat taken when the directory was opened.
func (d *Dir) Info() Info { return d.info }

// Stat re-reads the directory's stat through the open directory.
func (d *Dir) Stat() (Info, error) { return d.stat() }

// Close releases the directory. Closing a nil or closed Dir does nothing.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	return d.close()
}

// OpenDir opens the child directory name without following a symlink and
// without entering another mount. name is one path component (CheckName).
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return d.openDir(name)
}

// Lstat returns the stat of the child name without following a symlink.
func (d *Dir) Lstat(name string) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	return d.lstat(name)
}

// ReadDir reads all entries of the directory (without "." and ".."),
// starting over from the beginning at each call.
func (d *Dir) ReadDir() ([]Entry, error) { return d.readDir() }

// RemoveContents deletes everything beneath d (not d itself) and returns
// what it removed. On Linux it works through fds: it never follows a
// symlink (a link is unlinked, not followed), never enters another mount
// (such an entry is left in place and reported) and never leaves d; a
// directory that something keeps writing into is reported, not called
// empty. Elsewhere it uses os.Root.RemoveAll on each entry.
func (d *Dir) RemoveContents() (Usage, error) { return d.removeContents() }

// RemoveEmptyChild removes the now-empty child directory name, provided the
// name still refers to the object with identity want (ErrIdentity
// otherwise). Limitation: the check and the removal are two syscalls, so a
// swap between them could remove a different directory at that name, but
// only an empty one (rmdir never removes contents). Off Linux a zero want
// skips the identity check (Windows has none).
func (d *Dir) RemoveEmptyChild(name string, want Identity) error {
	return d.removeEmptyChild(name, want)
}

// Sync flushes the directory's entries to disk (a no-op off Linux).
func (d *Dir) Sync() error { return d.sync() }

// mapErr turns an OS error into the jail's refusal for it, keeping the OS
// error as the cause for errors.Is and logs: osRefusal (per platform) decides
// which sentinel, and result's errno table words it (see
// result.Error.FromOS). Any other error passes through unchanged; nil stays
// nil.
func mapErr(err error) error {
	if s := osRefusal(err); s != nil {
		return s.FromOS(err)
	}
	return err
}

// Identity is what a filesystem object is, independent of its name.
type Identity struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// Info is the lstat of one object.
type Info struct {
	Name      string
	Mode      fs.FileMode // type bits only are reliable across platforms
	Size      int64       // apparent size in bytes
	DiskBytes int64       // disk usage (blocks * 512 on Unix)
	ModTime   time.Time
	ID        Identity
	MountRoot bool // the object is the root of a mount (Linux, statx)
}

// IsDir reports whether the object is a directory.
func (i Info) IsDir() bool { return i.Mode.IsDir() }

// IsSymlink reports whether the object is a symbolic link.
func (i Info) IsSymlink() bool { return i.Mode&fs.ModeSymlink != 0 }

// IsRegular reports whether the object is a regular file.
func (i Info) IsRegular() bool { return i.Mode.IsRegular() }

// Entry is one directory entry as read from the directory.
type Entry struct {
	Name string
	Type fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 for regular, other type bits
}

// Usage is the disk usage of a tree.
type Usage struct {
	Bytes   int64     `json:"bytes"`
	Files   int64     `json:"files"`
	Dirs    int64     `json:"dirs"`
	Newest  time.Time `json:"-"`
	Skipped int64     `json:"skipped"` // entries not entered: mounts, vanished entries
}

// Add accumulates u2 into u.
func (u *Usage) Add(u2 Usage) {
	u.Bytes += u2.Bytes
	u.Files += u2.Files
	u.Dirs += u2.Dirs
	u.Skipped += u2.Skipped
	if u2.Newest.After(u.Newest) {
		u.Newest = u2.Newest
	}
}

// CheckName validates one path component: not empty, not "." or "..",
// no slash, no control characters, valid UTF-8.
func CheckName(name string) error {
	if name == "" {
		return ErrEmpty
	}
	if name == "." || name == ".." || strings.ContainsAny(name, `/`) {
		return ErrEscape
	}
	if badText(name) {
		return ErrBadName
	}
	if len(name) > 255 {
		return ErrTooLong
	}
	return nil
}

func badText(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// hasBidi reports bidirectional-override and isolate characters, which let
// a path read differently from what it is (U+202A..U+202E, U+2066..U+2069,
// U+200E, U+200F). Requests may not carry them; names found on disk are
// still handled (as data), so a scan or removal never stalls on one.
func hasBidi(s string) bool {
	for _, r := range s {
		if (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f {
			return true
		}
	}
	return false
}

// Clean validates a path from a request and returns it relative to root
// (an absolute, canonical directory path): "." for the root itself. It
// accepts a relative path or an absolute path inside root; ".." that leaves
// root, absolute paths elsewhere, NUL bytes, control characters and invalid
// UTF-8 are refused. Clean is lexical: the anchored open is what enforces
// the boundary against symlinks and races.
func Clean(root, p string) (string, error) {
	if p == "" {
		return "", ErrEmpty
	}
	if len(p) > MaxPathLen {
		return "", ErrTooLong
	}
	if badText(p) || hasBidi(p) {
		return "", ErrBadName
	}
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		if !filepath.IsAbs(root) {
			// No canonical root to compare with: an empty root would
			// otherwise accept every absolute path.
			return "", ErrEscape
		}
		root = filepath.Clean(root)
		c := filepath.Clean(p)
		if c == root {
			return ".", nil
		}
		prefix := root
		if !strings.HasSuffix(prefix, string(filepath.Separator)) {
			prefix += string(filepath.Separator)
		}
		rel, ok := strings.CutPrefix(c, prefix)
		if !ok {
			return "", ErrEscape
		}
		return filepath.ToSlash(rel), nil
	}
	if filepath.VolumeName(p) != "" {
		return "", ErrEscape
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", ErrEscape
	}
	return filepath.ToSlash(c), nil
}

// Split returns the parent ("." for top level) and the base name of a
// cleaned relative path.
func Split(rel string) (parent, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel
	}
	return rel[:i], rel[i+1:]
}

// Join joins a cleaned relative path and a name.
func Join(rel, name string) string {
	if rel == "." || rel == "" {
		return name
	}
	return rel + "/" + name
}
