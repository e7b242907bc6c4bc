//go:build linux

// The Linux implementation of moves: renameat2(RENAME_NOREPLACE) between
// parent directory fds opened anchored, linkat+unlinkat where a filesystem
// lacks the flag, and fsync of every changed directory. The exported API and
// its documentation are in move.go.

package jail

import (
	"errors"

	"golang.org/x/sys/unix"
)

// moveGuarantee is MoveGuarantee's value on Linux.
const moveGuarantee = "renameat2(RENAME_NOREPLACE) between anchored parent directory fds; linkat+unlinkat for files where the filesystem lacks it; directories fsync'd"

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

func (m *Mover) move(src, dst string, want FileState) error {
	sp, sb := Split(src)
	dp, db := Split(dst)
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

func (m *Mover) sync() error {
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

func (m *Mover) close() error {
	for k, d := range m.dirs {
		d.Close()
		delete(m.dirs, k)
	}
	return nil
}

func (r *Root) mkdirAll(rel string) (created []string, err error) {
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

func (r *Root) removeEmptyDir(rel string) error {
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

func (r *Root) removeLinkedName(rel, twin string, want Identity) error {
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

func (r *Root) syncDir(rel string) error {
	d, err := r.OpenDir(rel)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
