//go:build linux

package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// purgeMaxFds bounds the directory fds a PurgeTree walk holds open at once
// (besides the one of the path's parent), whatever the depth.
const purgeMaxFds = 32

// errPurgeMount is why a directory on another device, or the root of a
// mount, stays.
var errPurgeMount = errors.New("another mount (never entered)")

// purgeFrame is one directory on the walk's path from the top.
type purgeFrame struct {
	fd      int      // -1 while closed to bound the fds in use
	id      Identity // checked when the fd is opened again through ".."
	name    string   // in the parent
	bytes   int64    // the directory's own disk bytes
	pending []Entry  // entries still to remove
	lists   int      // listings done
	failed  map[string]bool
	stuck   bool // something beneath stays, so this directory does too
	owned   bool // given mode 0700 already
}

// purger is one PurgeTree (or MeasureTree) walk.
type purger struct {
	measure bool
	dev     uint64
	top     int // the path's parent, O_PATH
	stack   []purgeFrame
	low     int // frames below low have fd -1
	left    Usage
	first   string // the first entry that stayed, relative to the path
	why     error
}

func purgeTree(path string, measure bool) (Usage, error) {
	path = filepath.Clean(path)
	parent, base := filepath.Split(path)
	if !filepath.IsAbs(path) || base == "" || base == "." || base == ".." {
		return Usage{}, result.New(result.InvalidRequest, "PurgeTree needs an absolute path below the root directory")
	}
	top, err := retry(func() (int, error) {
		return unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err == unix.ENOENT {
		return Usage{}, nil
	}
	if err != nil {
		return Usage{}, result.Wrap(result.OperationFailed, "the directory holding the tree cannot be opened", err)
	}
	defer unix.Close(top)
	var st unix.Stat_t
	if err := retryErr(func() error { return unix.Fstatat(top, base, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		if err == unix.ENOENT {
			return Usage{}, nil
		}
		return Usage{}, result.Wrap(result.OperationFailed, "the tree cannot be examined", err)
	}
	p := &purger{measure: measure, dev: uint64(st.Dev), top: top}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if !measure {
			if err := retryErr(func() error { return unix.Unlinkat(top, base, 0) }); err == nil || err == unix.ENOENT {
				return Usage{}, nil
			} else {
				p.why, p.first = err, base
			}
		}
		p.left = Usage{Files: 1, Bytes: st.Blocks * 512}
		return p.left, p.err()
	}
	fd, info, err := p.enter(top, base)
	if err != nil {
		p.left = Usage{Dirs: 1, Bytes: st.Blocks * 512, Skipped: 1}
		p.why, p.first = err, "."
		if measure {
			return p.left, nil
		}
		return p.left, p.err()
	}
	p.stack = append(p.stack, purgeFrame{fd: fd, id: info.ID, name: base, bytes: info.DiskBytes})
	p.walk()
	if measure {
		return p.left, nil
	}
	return p.left, p.err()
}

// err is the walk's error: nil when nothing stayed.
func (p *purger) err() error {
	if p.why == nil {
		return nil
	}
	return result.Wrap(result.OperationFailed, fmt.Sprintf("%d entries (%d bytes) could not be removed; the first: %s",
		p.left.Files+p.left.Dirs, p.left.Bytes, p.first), p.why)
}

// walk removes (or measures) everything beneath the top frame, then the
// top itself, one entry at a time.
func (p *purger) walk() {
	for len(p.stack) > 0 {
		i := len(p.stack) - 1
		f := &p.stack[i]
		if len(f.pending) == 0 {
			// Listed again after a pass, for entries that appeared meanwhile;
			// a measure changes nothing and lists once.
			if f.lists < 3 && (f.lists == 0 || !p.measure) {
				names, err := p.list(f)
				f.lists++
				if err != nil {
					p.stay(i, ".", Usage{}, err)
				} else if len(names) > 0 {
					f.pending = names
					continue
				}
			} else if f.lists >= 3 && !p.measure {
				if names, err := p.list(f); err != nil || len(names) > 0 {
					p.stay(i, ".", Usage{}, unix.ENOTEMPTY) // something keeps writing
				}
			}
			if !p.pop() {
				return
			}
			continue
		}
		e := f.pending[len(f.pending)-1]
		f.pending = f.pending[:len(f.pending)-1]
		p.entry(i, e)
	}
}

// list returns the entries of frame f not known to stay.
func (p *purger) list(f *purgeFrame) ([]Entry, error) {
	if _, err := unix.Seek(f.fd, 0, 0); err != nil {
		return nil, err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	var ents []Entry
	for {
		n, err := retry(func() (int, error) { return unix.Getdents(f.fd, *bp) })
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		ents = parseDirents((*bp)[:n], ents)
	}
	if len(f.failed) == 0 {
		return ents, nil
	}
	out := ents[:0]
	for _, e := range ents {
		if !f.failed[e.Name] {
			out = append(out, e)
		}
	}
	return out, nil
}

// own gives frame f's directory mode 0700, once, so that its entries can
// be examined and unlinked.
func (p *purger) own(f *purgeFrame) bool {
	if p.measure || f.owned || f.fd < 0 {
		return false
	}
	f.owned = true
	return unix.Fchmod(f.fd, 0o700) == nil
}

// entry removes the entry e of frame i, or enters it when it is a
// directory. A name the listing says is not a directory is unlinked at
// once (one syscall); its size is looked up only when it stays.
func (p *purger) entry(i int, e Entry) {
	f := &p.stack[i]
	name := e.Name
	isDir := e.Type == fs.ModeDir
	var size int64
	if p.measure || e.Type == fs.ModeIrregular {
		var st unix.Stat_t
		err := retryErr(func() error { return unix.Fstatat(f.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
		if err == unix.EACCES && p.own(f) {
			err = retryErr(func() error { return unix.Fstatat(f.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
		}
		switch {
		case err == unix.ENOENT:
			return
		case err != nil:
			p.stay(i, name, Usage{Skipped: 1}, err)
			return
		}
		isDir, size = st.Mode&unix.S_IFMT == unix.S_IFDIR, st.Blocks*512
		if p.measure && !isDir {
			p.left.Files++
			p.left.Bytes += size
			return
		}
	}
	if !isDir {
		err := retryErr(func() error { return unix.Unlinkat(f.fd, name, 0) })
		if (err == unix.EACCES || err == unix.EPERM) && p.own(f) {
			err = retryErr(func() error { return unix.Unlinkat(f.fd, name, 0) })
		}
		if err == nil || err == unix.ENOENT {
			return
		}
		if err != unix.EISDIR {
			p.stay(i, name, Usage{Files: 1, Bytes: p.sizeOf(f.fd, name)}, err)
			return
		}
		// It is a directory after all (replaced since the listing).
	}
	fd, info, err := p.enter(f.fd, name)
	if err == unix.EACCES && p.own(f) {
		fd, info, err = p.enter(f.fd, name)
	}
	if (err == unix.ENOTDIR || err == unix.ELOOP) && !p.measure {
		// Not a directory any more (replaced since the listing): unlink the name.
		if uerr := retryErr(func() error { return unix.Unlinkat(f.fd, name, 0) }); uerr == nil || uerr == unix.ENOENT {
			return
		}
	}
	if err != nil {
		if err == unix.ENOENT {
			return
		}
		p.stay(i, name, Usage{Dirs: 1, Bytes: p.sizeOf(f.fd, name), Skipped: 1}, err)
		return
	}
	p.stack = append(p.stack, purgeFrame{fd: fd, id: info.ID, name: name, bytes: info.DiskBytes})
	if len(p.stack)-p.low > purgeMaxFds {
		unix.Close(p.stack[p.low].fd)
		p.stack[p.low].fd = -1
		p.low++
	}
}

// sizeOf is the disk bytes of the entry name beneath dfd (0 when it
// cannot be examined).
func (p *purger) sizeOf(dfd int, name string) int64 {
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	return st.Blocks * 512
}

// enter opens the directory name beneath the directory dfd for listing,
// never following a symbolic link and never entering another mount. When
// its mode refuses that, and this is no measure, it first gives it mode
// 0700 through an O_PATH fd on the directory itself. A directory entered
// for removal whose owner bits are not rwx gets 0700 too.
func (p *purger) enter(dfd int, name string) (int, Info, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if (err == unix.EACCES || err == unix.EPERM) && !p.measure {
		fd, err = p.openAfterChmod(dfd, name)
	}
	if err != nil {
		return -1, Info{}, err
	}
	info, err := statFd(fd, name)
	if err == nil && (!info.IsDir() || info.MountRoot || info.ID.Dev != p.dev) {
		err = errPurgeMount
	}
	if err != nil {
		unix.Close(fd)
		return -1, Info{}, err
	}
	if !p.measure && info.Mode.Perm()&0o700 != 0o700 {
		_ = unix.Fchmod(fd, 0o700)
	}
	return fd, info, nil
}

// openAfterChmod opens name beneath dfd with O_PATH (which needs no
// permission on the directory itself), checks it is a directory of this
// mount, gives it mode 0700 and opens it for listing through that fd.
func (p *purger) openAfterChmod(dfd int, name string) (int, error) {
	op, err := retry(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	defer unix.Close(op)
	info, err := statFd(op, name)
	if err != nil {
		return -1, err
	}
	if !info.IsDir() || info.MountRoot || info.ID.Dev != p.dev {
		return -1, errPurgeMount
	}
	err = unix.Fchmodat(op, "", 0o700, unix.AT_EMPTY_PATH)
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS || err == unix.EINVAL {
		// No fchmodat2 (before Linux 6.6): the fd's /proc link names the
		// same directory and is followed to it, not to any path.
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(op), 0o700)
	}
	if err != nil {
		return -1, err
	}
	return retry(func() (int, error) {
		return unix.Openat(op, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}

// pop leaves the finished top frame and removes its directory (unless
// something beneath stayed). It reopens the parent through ".." when its
// fd was closed, and stops the walk (false) when that is not the
// directory it was: the tree moved.
func (p *purger) pop() bool {
	i := len(p.stack) - 1
	f := p.stack[i]
	pfd := p.top
	var parent *purgeFrame
	if i > 0 {
		parent = &p.stack[i-1]
		if parent.fd < 0 {
			fd, err := retry(func() (int, error) {
				return unix.Openat(f.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			})
			var info Info
			if err == nil {
				if info, err = statFd(fd, ".."); err == nil && info.ID != parent.id {
					err = errors.New("the directory's parent changed while it was removed")
				}
				if err != nil {
					unix.Close(fd)
				}
			}
			if err != nil {
				p.abort(err)
				return false
			}
			parent.fd, p.low = fd, i-1
		}
		pfd = parent.fd
	}
	unix.Close(f.fd)
	p.stack = p.stack[:i]
	if p.measure || f.stuck {
		p.left.Dirs++
		p.left.Bytes += f.bytes
		if parent != nil {
			parent.stuck = true
			p.fail(parent, f.name)
		}
		return true
	}
	err := retryErr(func() error { return unix.Unlinkat(pfd, f.name, unix.AT_REMOVEDIR) })
	if (err == unix.EACCES || err == unix.EPERM) && parent != nil && p.own(parent) {
		err = retryErr(func() error { return unix.Unlinkat(pfd, f.name, unix.AT_REMOVEDIR) })
	}
	if err != nil && err != unix.ENOENT {
		p.left.Dirs++
		p.left.Bytes += f.bytes
		if parent != nil {
			parent.stuck = true
			p.fail(parent, f.name)
			p.note(i-1, f.name, err)
		} else {
			p.note(-1, ".", err)
		}
	}
	return true
}

// abort ends the walk: every directory still on the path stays.
func (p *purger) abort(err error) {
	p.note(len(p.stack)-1, ".", err)
	for _, f := range p.stack {
		if f.fd >= 0 {
			unix.Close(f.fd)
		}
		p.left.Dirs++
		p.left.Bytes += f.bytes
	}
	p.stack = nil
}

// stay records that the entry name of frame i (or the frame's directory,
// for ".") stays, adding u to what is left.
func (p *purger) stay(i int, name string, u Usage, err error) {
	p.left.Add(u)
	f := &p.stack[i]
	f.stuck = true
	if name != "." {
		p.fail(f, name)
	}
	p.note(i, name, err)
}

func (p *purger) fail(f *purgeFrame, name string) {
	if f.failed == nil {
		f.failed = map[string]bool{}
	}
	f.failed[name] = true
}

// note keeps the first error and where it happened: the entry name of
// frame i, relative to the path; long paths keep their last components.
func (p *purger) note(i int, name string, err error) {
	if p.why != nil {
		return
	}
	p.why = err
	parts := []string{}
	if name != "." {
		parts = append(parts, name)
	}
	n := len(name)
	for j := i; j >= 1 && n < 200; j-- {
		parts = append(parts, p.stack[j].name)
		n += len(p.stack[j].name) + 1
	}
	rel := ""
	for j := len(parts) - 1; j >= 0; j-- {
		rel = filepath.Join(rel, parts[j])
	}
	if n >= 200 && i >= 1 {
		rel = ".../" + rel
	}
	if rel == "" {
		rel = "."
	}
	p.first = strings.TrimPrefix(rel, "/")
}
