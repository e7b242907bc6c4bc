//go:build linux

package jail

import (
	"errors"

	"golang.org/x/sys/unix"
)

// MoveGuarantee describes how this build moves files, for startup messages and docs.
const MoveGuarantee = "renameat2(RENAME_NOREPLACE) between anchored parent directory fds; linkat+unlinkat for files where the filesystem lacks it; directories fsync'd"

// Mover moves objects beneath one root. It keeps the parent directories it
// has opened (each opened anchored, never through a symlink, never across a
// mount) for the life of the Mover, and remembers which ones changed so that
// Sync can fsync them in one pass. A Mover is not for concurrent use.
//
// Moves never overwrite: the kernel refuses an existing destination
// (renameat2 RENAME_NOREPLACE). On a filesystem without that flag (EINVAL) a
// regular file is moved by linkat, which also refuses an existing name, then
// unlinkat of the source; a directory is refused (ErrDirNoReplace). The
// source is checked against the expected FileState through its parent fd
// right before the rename, and the destination is checked again right after:
// if the name was swapped between the two (an adversary inside the root),
// the object is moved back and the move reports ErrChanged. A crash between
// linkat and unlinkat leaves the same file under both names; see
// RemoveLinkedName.
type Mover struct {
	r     *Root
	dirs  map[string]*Dir
	dirty map[string]bool
}

// NewMover returns a Mover for r. Close it when done.
func (r *Root) NewMover() *Mover {
	return &Mover{r: r, dirs: map[string]*Dir{}, dirty: map[string]bool{}}
}

func (m *Mover) dir(rel string) (*Dir, error) {
	if d, ok := m.dirs[rel]; ok {
		return d, nil
	}
	d, err := m.r.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	m.dirs[rel] = d
	return d, nil
}

// Move renames the object at src to dst (both cleaned root-relative paths)
// if src is still want. dst's parent must exist (see MkdirAll). Nothing is
// fsync'd: call Sync before relying on the move surviving a power loss.
func (m *Mover) Move(src, dst string, want FileState) error {
	sp, sb := Split(src)
	dp, db := Split(dst)
	if err := CheckName(sb); err != nil {
		return err
	}
	if err := CheckName(db); err != nil {
		return err
	}
	sd, err := m.dir(sp)
	if err != nil {
		return err
	}
	dd, err := m.dir(dp)
	if err != nil {
		return err
	}
	info, err := sd.Lstat(sb)
	if err != nil {
		return err
	}
	if err := want.check(info); err != nil {
		return err
	}
	if err := renameNoReplace(sd, sb, dd, db, want.Dir); err != nil {
		return err
	}
	m.dirty[sp], m.dirty[dp] = true, true
	// The name may have been swapped between the check and the rename:
	// verify what arrived, and send anything else back where it came from.
	got, err := dd.Lstat(db)
	if err == nil && want.Matches(got) {
		return nil
	}
	if err == nil {
		_ = renameNoReplace(dd, db, sd, sb, got.IsDir())
	}
	return ErrChanged
}

func renameNoReplace(sd *Dir, sb string, dd *Dir, db string, isDir bool) error {
	err := retryErr(func() error { return unix.Renameat2(sd.fd, sb, dd.fd, db, unix.RENAME_NOREPLACE) })
	switch {
	case err == nil:
		return nil
	case err == unix.EEXIST || err == unix.ENOTEMPTY:
		return ErrOccupied.Wrap(err)
	case err == unix.EINVAL || err == unix.ENOSYS:
		if isDir {
			return ErrDirNoReplace.Wrap(err)
		}
		// linkat refuses an existing name, so this never overwrites either.
		if lerr := retryErr(func() error { return unix.Linkat(sd.fd, sb, dd.fd, db, 0) }); lerr != nil {
			if lerr == unix.EEXIST {
				return ErrOccupied.Wrap(lerr)
			}
			return mapErr(lerr)
		}
		if uerr := retryErr(func() error { return unix.Unlinkat(sd.fd, sb, 0) }); uerr != nil && uerr != unix.ENOENT {
			return mapErr(uerr)
		}
		return nil
	case err == unix.EXDEV:
		return ErrMount.Wrap(err)
	}
	return mapErr(err)
}

// Sync fsyncs every directory whose entries this Mover changed since the
// last Sync.
func (m *Mover) Sync() error {
	var first error
	for rel := range m.dirty {
		d, err := m.dir(rel)
		if err == nil {
			err = d.Sync()
		}
		if err != nil && first == nil {
			first = err
		}
		delete(m.dirty, rel)
	}
	return first
}

// Close releases the directories the Mover opened.
func (m *Mover) Close() error {
	for k, d := range m.dirs {
		d.Close()
		delete(m.dirs, k)
	}
	return nil
}

// MkdirAll creates the directory rel and any missing parents, one component
// at a time through anchored directory fds: an existing component that is a
// symlink, a file or a mount point is refused, never followed. It returns
// the directories it created, outermost first, after fsyncing each created
// directory's parent.
func (r *Root) MkdirAll(rel string) (created []string, err error) {
	if rel == "." || rel == "" {
		return nil, nil
	}
	cur, err := r.OpenDir(".")
	if err != nil {
		return nil, err
	}
	defer func() { cur.Close() }()
	for _, name := range splitAll(rel) {
		if name == "" || name == "." {
			continue
		}
		if err := CheckName(name); err != nil {
			return created, err
		}
		next, err := cur.OpenDir(name)
		if err != nil && errors.Is(err, unix.ENOENT) {
			if merr := retryErr(func() error { return unix.Mkdirat(cur.fd, name, 0o755) }); merr != nil && merr != unix.EEXIST {
				return created, mapErr(merr)
			} else if merr == nil {
				created = append(created, Join(cur.rel, name))
				if serr := cur.Sync(); serr != nil {
					return created, serr
				}
			}
			next, err = cur.OpenDir(name)
		}
		if err != nil {
			return created, err
		}
		cur.Close()
		cur = next
	}
	return created, nil
}

// RemoveEmptyDir removes the directory rel if it is empty (rmdir never
// removes contents) and fsyncs its parent. A symlink at rel is refused.
func (r *Root) RemoveEmptyDir(rel string) error {
	parent, base := Split(rel)
	d, err := r.OpenDir(parent)
	if err != nil {
		return err
	}
	defer d.Close()
	info, err := d.Lstat(base)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return ErrNotDir
	}
	if err := retryErr(func() error { return unix.Unlinkat(d.fd, base, unix.AT_REMOVEDIR) }); err != nil {
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			return ErrNotEmpty.Wrap(err)
		}
		return mapErr(err)
	}
	return d.Sync()
}

// RemoveLinkedName removes the name rel only when rel and twin are two names
// of the same regular file with identity want: the state an interrupted
// linkat+unlinkat move leaves behind. It never removes the last name of a
// file.
func (r *Root) RemoveLinkedName(rel, twin string, want Identity) error {
	parent, base := Split(rel)
	d, err := r.OpenDir(parent)
	if err != nil {
		return err
	}
	defer d.Close()
	a, err := d.Lstat(base)
	if err != nil {
		return err
	}
	b, err := r.Lstat(twin)
	if err != nil {
		return err
	}
	if !a.IsRegular() || !b.IsRegular() || a.ID != want || b.ID != want {
		return ErrIdentity
	}
	if err := retryErr(func() error { return unix.Unlinkat(d.fd, base, 0) }); err != nil {
		return mapErr(err)
	}
	return d.Sync()
}

// SyncDir fsyncs the directory rel, opened anchored.
func (r *Root) SyncDir(rel string) error {
	d, err := r.OpenDir(rel)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
