// Package jail performs filesystem operations anchored beneath a root
// directory that the operator fixed at startup.
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
// weaker guarantee.
package jail

import (
	"io/fs"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/safety/result"
)

// MaxPathLen is the longest path the jail accepts from a request.
const MaxPathLen = 4096

// Sentinel refusals. They compare with errors.Is.
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
