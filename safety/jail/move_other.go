//go:build !linux

package jail

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// MoveGuarantee describes how this build moves files, for startup messages and docs.
const MoveGuarantee = "os.Root fallback: files moved by link+remove (never overwrites); directories by an existence check then rename (a racing writer can slip in between); no directory fsync"

// Mover moves objects beneath one root (see the Linux doc). Off Linux it
// works through os.Root: a regular file is moved with Root.Link, which
// refuses an existing name, then Root.Remove of the source; a directory is
// moved with Root.Rename after checking that the destination is free, which
// leaves a window in which a racing writer's object could be replaced.
// Symlinks inside the root are followed by os.Root in parent components.
// Directory fsync is a no-op.
type Mover struct{ r *Root }

// NewMover returns a Mover for r.
func (r *Root) NewMover() *Mover { return &Mover{r: r} }

// Move renames src to dst if src is still want; see the type's doc.
func (m *Mover) Move(src, dst string, want FileState) error {
	_, sb := Split(src)
	_, db := Split(dst)
	if err := CheckName(sb); err != nil {
		return err
	}
	if err := CheckName(db); err != nil {
		return err
	}
	root := m.r.dir.root
	info, err := m.r.Lstat(src)
	if err != nil {
		return err
	}
	if err := want.check(info); err != nil {
		return err
	}
	if _, err := root.Lstat(filepath.FromSlash(dst)); err == nil {
		return ErrOccupied
	}
	if want.Dir {
		return mapErr(root.Rename(filepath.FromSlash(src), filepath.FromSlash(dst)))
	}
	if err := root.Link(filepath.FromSlash(src), filepath.FromSlash(dst)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ErrOccupied
		}
		return mapErr(err)
	}
	return mapErr(root.Remove(filepath.FromSlash(src)))
}

// Sync is a no-op off Linux.
func (m *Mover) Sync() error { return nil }

// Close releases nothing off Linux.
func (m *Mover) Close() error { return nil }

// MkdirAll creates rel and missing parents, refusing a symlink component.
func (r *Root) MkdirAll(rel string) (created []string, err error) {
	cur := "."
	for _, name := range strings.Split(rel, "/") {
		if name == "" || name == "." {
			continue
		}
		if err := CheckName(name); err != nil {
			return created, err
		}
		cur = Join(cur, name)
		info, err := r.Lstat(cur)
		if err == nil {
			if info.IsSymlink() {
				return created, ErrSymlink
			}
			if !info.IsDir() {
				return created, ErrNotDir
			}
			continue
		}
		if merr := r.dir.root.Mkdir(filepath.FromSlash(cur), 0o755); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return created, mapErr(merr)
		} else if merr == nil {
			created = append(created, cur)
		}
	}
	return created, nil
}

// RemoveEmptyDir removes the empty directory rel.
func (r *Root) RemoveEmptyDir(rel string) error {
	info, err := r.Lstat(rel)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return ErrNotDir
	}
	if err := r.dir.root.Remove(filepath.FromSlash(rel)); err != nil {
		return ErrNotEmpty
	}
	return nil
}

// RemoveLinkedName removes rel when rel and twin are the same regular file.
func (r *Root) RemoveLinkedName(rel, twin string, want Identity) error {
	a, err := r.Lstat(rel)
	if err != nil {
		return err
	}
	b, err := r.Lstat(twin)
	if err != nil {
		return err
	}
	if !a.IsRegular() || !b.IsRegular() || a.ID != want || b.ID != want || want == (Identity{}) {
		return ErrIdentity
	}
	return mapErr(r.dir.root.Remove(filepath.FromSlash(rel)))
}

// SyncDir is a no-op off Linux.
func (r *Root) SyncDir(rel string) error { return nil }
