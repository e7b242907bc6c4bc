//go:build !linux

package jail

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// setAside renames base in parent to aside in top through the root's
// os.Root after checking that aside is free (os.Root has no
// RENAME_NOREPLACE; see MoveGuarantee), then checks what arrived against
// want where the platform gives an identity.
func setAside(parent *Dir, base string, top *Dir, aside string, want Identity) error {
	if _, err := top.root.Lstat(aside); err == nil {
		return ErrOccupied
	} else if !errors.Is(err, fs.ErrNotExist) {
		return errAsideUnavailable
	}
	if err := top.root.Rename(filepath.FromSlash(Join(parent.rel, base)), aside); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return errAsideUnavailable
		}
		return mapErr(err)
	}
	got, err := top.Lstat(aside)
	if err == nil && got.IsDir() && (want == Identity{} || got.ID == want) {
		return nil
	}
	if err == nil {
		_ = putBack(top, aside, parent, base)
	}
	return ErrIdentity
}

// putBack renames aside in top back to base in parent.
func putBack(top *Dir, aside string, parent *Dir, base string) error {
	dst := filepath.FromSlash(Join(parent.rel, base))
	if _, err := top.root.Lstat(dst); err == nil {
		return ErrOccupied
	}
	return mapErr(top.root.Rename(aside, dst))
}
