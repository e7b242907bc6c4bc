//go:build linux

// The Linux implementation of the jail: every lookup is openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV
// from an open directory fd (or, on kernels without openat2, a walk one
// component at a time with O_NOFOLLOW and a device check), and removal goes
// through the verified fds. The exported API and its documentation are in
// jail.go; this file holds only the unexported implementations it calls.

package jail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// noOpenat2 is set once openat2 reports ENOSYS; the component walk is used from then on.
var noOpenat2 atomic.Bool

// guarantee is Guarantee's value on Linux.
const guarantee = "openat2 anchored resolution: no symlinks, no escapes, no mount crossing; identity-checked fd-relative removal"

// dirHandle is an open directory file descriptor.
type dirHandle struct {
	fd     int
	listed bool // readDir moved the fd's offset: the next listing rewinds
}

// openCanonical opens the canonical root path with O_NOFOLLOW and stats it
// through the fd.
func openCanonical(canon string, _ fs.FileInfo) (*Root, error) {
	fd, err := retry(func() (int, error) {
		return unix.Open(canon, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, result.Wrap(result.PolicyDenied, "the root cannot be opened", err)
	}
	d := &Dir{dirHandle: dirHandle{fd: fd}, rel: "."}
	if d.info, err = statFd(fd, "."); err != nil {
		unix.Close(fd)
		return nil, result.Wrap(result.PolicyDenied, "the root cannot be examined", err)
	}
	return &Root{dir: d, path: canon}, nil
}

func (r *Root) openDir(rel string) (*Dir, error) {
	if rel == "." || rel == "" {
		// A fresh open file description, not a dup: a dup would share the
		// directory offset with every other Dir of the root, and two
		// concurrent ReadDir calls would corrupt each other's listing.
		fd, err := retry(func() (int, error) {
			return unix.Openat(r.dir.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return nil, mapErr(err)
		}
		return &Dir{dirHandle: dirHandle{fd: fd}, rel: ".", info: r.dir.info}, nil
	}
	fd, err := r.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			// O_DIRECTORY reports a final symlink as ENOTDIR; say what it is.
			if li, lerr := r.Lstat(rel); lerr == nil && li.IsSymlink() {
				return nil, ErrSymlink.Wrap(err)
			}
		}
		return nil, err
	}
	d := &Dir{dirHandle: dirHandle{fd: fd}, rel: rel}
	if d.info, err = statFd(fd, filepath.Base(rel)); err != nil {
		d.Close()
		return nil, mapErr(err)
	}
	if d.info.MountRoot || d.info.ID.Dev != r.dir.info.ID.Dev {
		d.Close()
		return nil, ErrMount
	}
	return d, nil
}

func (r *Root) openFile(rel string) (*os.File, error) {
	fd, err := r.openBeneath(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, result.New(result.PolicyDenied, "not a regular file")
	}
	return os.NewFile(uintptr(fd), filepath.Join(r.path, rel)), nil
}

func (r *Root) lstat(rel string) (Info, error) {
	parent, base := Split(rel)
	d, err := r.OpenDir(parent)
	if err != nil {
		return Info{}, err
	}
	defer d.Close()
	return d.Lstat(base)
}

func (r *Root) openBeneath(rel string, flags int) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
		for range 16 {
			fd, err := unix.Openat2(r.dir.fd, rel, &how)
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			if err == unix.ENOSYS {
				noOpenat2.Store(true)
				break
			}
			if err != nil {
				return -1, mapErr(err)
			}
			return fd, nil
		}
		if !noOpenat2.Load() {
			return -1, result.New(result.OperationFailed, "the path kept changing while it was resolved; try again")
		}
	}
	return r.walkBeneath(rel, flags)
}

// walkBeneath is the fallback for kernels without openat2: one component at
// a time with O_NOFOLLOW, checking the device at each step.
func (r *Root) walkBeneath(rel string, flags int) (int, error) {
	if filepath.IsAbs(rel) {
		return -1, ErrEscape
	}
	cur := r.dir
	owned := false
	var parts []string
	for _, p := range splitAll(rel) {
		if p != "" && p != "." { // "a//b" and "a/./b" name the same thing; openat2 accepts them
			parts = append(parts, p)
		}
	}
	for i, name := range parts {
		if err := CheckName(name); err != nil {
			if owned {
				cur.Close()
			}
			return -1, err
		}
		if i == len(parts)-1 {
			fd, err := retry(func() (int, error) {
				return unix.Openat(cur.fd, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
			})
			if err != nil {
				if owned {
					cur.Close()
				}
				return -1, mapErr(err)
			}
			// The last lookup crosses a mount point if one is there (a
			// bind-mounted file or directory); openat2's RESOLVE_NO_XDEV
			// refuses that, so the walk must too.
			fi, err := statFd(fd, name)
			// (A file's st_dev may differ on overlayfs; only directories are
			// held to their parent's device, as in Dir.OpenDir.)
			if err == nil && (fi.MountRoot || (fi.IsDir() && fi.ID.Dev != cur.info.ID.Dev)) {
				err = ErrMount
			}
			if owned {
				cur.Close()
			}
			if err != nil {
				unix.Close(fd)
				return -1, mapErr(err)
			}
			return fd, nil
		}
		next, err := cur.OpenDir(name)
		if owned {
			cur.Close()
		}
		if err != nil {
			return -1, err
		}
		cur, owned = next, true
	}
	return -1, ErrEmpty
}

func splitAll(rel string) []string {
	var out []string
	for rel != "" {
		i := 0
		for i < len(rel) && rel[i] != '/' {
			i++
		}
		out = append(out, rel[:i])
		if i == len(rel) {
			break
		}
		rel = rel[i+1:]
	}
	return out
}

func (d *Dir) stat() (Info, error) {
	i, err := statFd(d.fd, d.info.Name)
	if err != nil {
		return Info{}, mapErr(err)
	}
	return i, nil
}

func (d *Dir) close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

func (d *Dir) openDir(name string) (*Dir, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if err == unix.ENOTDIR {
			// O_DIRECTORY reports a symlink as ENOTDIR; say what it is.
			if li, lerr := d.Lstat(name); lerr == nil && li.IsSymlink() {
				return nil, ErrSymlink.Wrap(err)
			}
		}
		return nil, mapErr(err)
	}
	c := &Dir{dirHandle: dirHandle{fd: fd}, rel: Join(d.rel, name)}
	if c.info, err = statFd(fd, name); err != nil {
		c.Close()
		return nil, mapErr(err)
	}
	if c.info.MountRoot || c.info.ID.Dev != d.info.ID.Dev {
		c.Close()
		return nil, ErrMount
	}
	return c, nil
}

func (d *Dir) lstat(name string) (Info, error) {
	var stx unix.Statx_t
	err := retryErr(func() error {
		return unix.Statx(d.fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT,
			unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_INO|unix.STATX_SIZE|unix.STATX_BLOCKS|unix.STATX_MTIME, &stx)
	})
	if err != nil {
		return Info{}, mapErr(err)
	}
	return infoFromStatx(name, &stx), nil
}

func (d *Dir) readDir() ([]Entry, error) {
	if d.listed {
		if _, err := unix.Seek(d.fd, 0, 0); err != nil {
			return nil, mapErr(err)
		}
	}
	d.listed = true
	var out []Entry
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := retry(func() (int, error) { return unix.Getdents(d.fd, buf) })
		if err != nil {
			return out, mapErr(err)
		}
		if n <= 0 {
			return out, nil
		}
		out = parseDirents(buf[:n], out)
	}
}

// direntBufs holds getdents buffers: a walk lists many directories, and a
// fresh 32 KiB buffer for each was a measurable part of a scan.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// parseDirents decodes linux_dirent64 records.
func parseDirents(b []byte, out []Entry) []Entry {
	for len(b) >= 19 {
		reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
		if reclen < 19 || reclen > len(b) {
			break
		}
		typ := b[18]
		nameb := b[19:reclen]
		for i, c := range nameb {
			if c == 0 {
				nameb = nameb[:i]
				break
			}
		}
		b = b[reclen:]
		name := string(nameb)
		if name == "." || name == ".." {
			continue
		}
		out = append(out, Entry{Name: name, Type: direntType(typ)})
	}
	return out
}

func direntType(t uint8) fs.FileMode {
	switch t {
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_REG:
		return 0
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular // unknown: callers Lstat
}

// removeContents deletes through fds: up to three passes over the entries
// (a racing writer may add more), then a final check that d is empty.
func (d *Dir) removeContents() (Usage, error) {
	var u Usage
	var firstErr error
	for pass := 0; pass < 3; pass++ {
		ents, err := d.ReadDir()
		if err != nil {
			return u, err
		}
		if len(ents) == 0 {
			// Everything is gone: an error on the way (a racing writer) no
			// longer describes the result.
			return u, nil
		}
		progress := false
		for _, e := range ents {
			ru, err := d.removeEntry(e)
			u.Add(ru)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			progress = true
		}
		if !progress {
			break
		}
	}
	if firstErr == nil {
		// Three passes, each making progress, and still not empty: something
		// keeps writing. Do not report success for a directory that is not empty.
		if ents, err := d.ReadDir(); err != nil {
			return u, err
		} else if len(ents) > 0 {
			firstErr = result.Wrap(result.OperationFailed, "the directory was not empty (something wrote into it)", unix.ENOTEMPTY)
		}
	}
	return u, firstErr
}

func (d *Dir) removeEntry(e Entry) (Usage, error) {
	var u Usage
	if e.Type != fs.ModeDir {
		var st unix.Stat_t
		_ = unix.Fstatat(d.fd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
		err := retryErr(func() error { return unix.Unlinkat(d.fd, e.Name, 0) })
		if err == nil {
			u.Files++
			u.Bytes += st.Blocks * 512
			return u, nil
		}
		if err == unix.ENOENT {
			return u, nil
		}
		if err != unix.EISDIR && err != unix.EPERM {
			return u, mapErr(err)
		}
		// It became (or was) a directory: fall through and open it without following.
	}
	c, err := d.OpenDir(e.Name)
	if err != nil {
		if errors.Is(err, ErrMount) {
			return u, result.New(result.OperationFailed, "a mount point inside the directory was left in place")
		}
		// Swapped for a symlink or file since it was read: unlink that name itself.
		if uerr := unix.Unlinkat(d.fd, e.Name, 0); uerr == nil || uerr == unix.ENOENT {
			return u, nil
		}
		return u, err
	}
	cu, err := c.RemoveContents()
	c.Close()
	u.Add(cu)
	if err != nil {
		return u, err
	}
	if err := retryErr(func() error { return unix.Unlinkat(d.fd, e.Name, unix.AT_REMOVEDIR) }); err != nil && err != unix.ENOENT {
		return u, mapErr(err)
	}
	u.Dirs++
	u.Bytes += c.info.DiskBytes
	return u, nil
}

func (d *Dir) removeEmptyChild(name string, want Identity) error {
	info, err := d.Lstat(name)
	if err != nil {
		return err
	}
	if !info.IsDir() || info.ID != want {
		return ErrIdentity
	}
	if err := retryErr(func() error { return unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR) }); err != nil {
		return mapErr(err)
	}
	return nil
}

func (d *Dir) sync() error { return mapErr(unix.Fsync(d.fd)) }

func statFd(fd int, name string) (Info, error) {
	var stx unix.Statx_t
	err := retryErr(func() error {
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW,
			unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_INO|unix.STATX_SIZE|unix.STATX_BLOCKS|unix.STATX_MTIME, &stx)
	})
	if err != nil {
		return Info{}, err
	}
	return infoFromStatx(name, &stx), nil
}

func infoFromStatx(name string, s *unix.Statx_t) Info {
	var mode fs.FileMode
	switch uint32(s.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		mode = fs.ModeDir
	case unix.S_IFLNK:
		mode = fs.ModeSymlink
	case unix.S_IFREG:
		mode = 0
	case unix.S_IFIFO:
		mode = fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode = fs.ModeSocket
	case unix.S_IFCHR:
		mode = fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode = fs.ModeDevice
	default:
		mode = fs.ModeIrregular
	}
	mode |= fs.FileMode(s.Mode & 0o777)
	return Info{
		Name:      name,
		Mode:      mode,
		Size:      int64(s.Size),
		DiskBytes: int64(s.Blocks) * 512,
		ModTime:   time.Unix(s.Mtime.Sec, int64(s.Mtime.Nsec)),
		ID:        Identity{Dev: unix.Mkdev(s.Dev_major, s.Dev_minor), Ino: s.Ino},
		MountRoot: s.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && s.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0,
	}
}

func retry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}

func retryErr(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// osRefusal names the jail refusal an OS error from the anchored syscalls
// is, or nil. openat2 reports ".." or an absolute path (RESOLVE_BENEATH) and
// a mount crossing (RESOLVE_NO_XDEV) alike as EXDEV, and any symbolic link
// (RESOLVE_NO_SYMLINKS, O_NOFOLLOW) as ELOOP.
func osRefusal(err error) *result.Error {
	switch err {
	case unix.EXDEV:
		return ErrEscape
	case unix.ELOOP:
		return ErrSymlink
	case unix.ENOENT:
		return ErrNotFound
	case unix.ENOTDIR:
		return ErrNotDir
	}
	return nil
}

func isXdev(err error) bool   { return errors.Is(err, unix.EXDEV) }
func isNotDir(err error) bool { return errors.Is(err, unix.ENOTDIR) }
