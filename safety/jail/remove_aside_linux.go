//go:build linux

package jail

import "golang.org/x/sys/unix"

// setAside renames base in parent to aside in top with
// renameat2(RENAME_NOREPLACE) between the two anchored fds, then checks
// that what arrived is the directory with identity want; anything else (a
// name swapped in between the check and the rename) is renamed back and
// refused.
func setAside(parent *Dir, base string, top *Dir, aside string, want Identity) error {
	err := retryErr(func() error { return unix.Renameat2(parent.fd, base, top.fd, aside, unix.RENAME_NOREPLACE) })
	switch err {
	case nil:
	case unix.EXDEV, unix.EACCES, unix.EPERM, unix.EINVAL, unix.ENOSYS, unix.EROFS:
		return errAsideUnavailable
	case unix.EEXIST, unix.ENOTEMPTY:
		return ErrOccupied.Wrap(err)
	default:
		return mapErr(err)
	}
	got, err := top.Lstat(aside)
	if err == nil && got.IsDir() && got.ID == want {
		return nil
	}
	if err == nil {
		_ = putBack(top, aside, parent, base)
	}
	return ErrIdentity
}

// putBack renames aside in top back to base in parent, never over an
// existing name.
func putBack(top *Dir, aside string, parent *Dir, base string) error {
	return mapErr(retryErr(func() error { return unix.Renameat2(top.fd, aside, parent.fd, base, unix.RENAME_NOREPLACE) }))
}
