//go:build !linux

// The fallback implementation of moves, on os.Root: a regular file is moved
// with Root.Link (which refuses an existing name) then Root.Remove of the
// source; a directory with Root.Rename after checking that the destination
// is free. Directory fsync is a no-op. The exported API and its
// documentation are in move.go.

package jail

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// moveGuarantee is MoveGuarantee's value off Linux.
const moveGuarantee = "os.Root fallback: files moved by link+remove (never overwrites); directories by an existence check then rename (a racing writer can slip in between); no directory fsync"

func (m *Mover) move(src, dst string, want FileState) error {
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

func (m *Mover) sync() error { return nil }

func (m *Mover) close() error { return nil }

func (r *Root) mkdirAll(rel string) (created []string, err error) {
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

func (r *Root) removeEmptyDir(rel string) error {
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

// removeLinkedName also refuses a zero want: Windows has no identity to
// prove the two names are one file.
func (r *Root) removeLinkedName(rel, twin string, want Identity) error {
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

func (r *Root) syncDir(string) error { return nil }
