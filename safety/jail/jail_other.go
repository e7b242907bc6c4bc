//go:build !linux

// The fallback implementation of the jail for every platform but Linux, on
// os.Root: ".." and absolute paths cannot escape, but symbolic links that
// stay inside the root are followed and mount points are not detected (see
// Guarantee). The exported API and its documentation are in jail.go; this
// file holds only the unexported implementations it calls.

package jail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/safety/result"
)

// guarantee is Guarantee's value off Linux.
const guarantee = "os.Root fallback: no escapes by '..' or absolute paths; symlinks inside the root are followed; mounts are not detected; identity is best effort"

// dirHandle is an os.Root opened at the directory.
type dirHandle struct{ root *os.Root }

// openCanonical opens the canonical root path as an os.Root; fi is its lstat.
func openCanonical(canon string, fi fs.FileInfo) (*Root, error) {
	r, err := os.OpenRoot(canon)
	if err != nil {
		return nil, result.Wrap(result.PolicyDenied, "the root cannot be opened", err)
	}
	learnRootEscape(r)
	return &Root{dir: &Dir{dirHandle: dirHandle{r}, rel: ".", info: infoOf(fi)}, path: canon}, nil
}

func (r *Root) openDir(rel string) (*Dir, error) {
	if rel == "" || rel == "." {
		sub, err := r.dir.root.OpenRoot(".")
		if err != nil {
			return nil, mapErr(err)
		}
		return &Dir{dirHandle: dirHandle{sub}, rel: ".", info: r.dir.info}, nil
	}
	return r.dir.openSub(rel)
}

func (r *Root) openFile(rel string) (*os.File, error) {
	fi, err := r.dir.root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return nil, mapErr(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, result.New(result.PolicyDenied, "not a regular file")
	}
	f, err := r.dir.root.Open(filepath.FromSlash(rel))
	return f, mapErr(err)
}

func (r *Root) lstat(rel string) (Info, error) {
	fi, err := r.dir.root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return Info{}, mapErr(err)
	}
	return infoOf(fi), nil
}

func (d *Dir) openSub(rel string) (*Dir, error) {
	fi, err := d.root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return nil, mapErr(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, ErrSymlink
	}
	if !fi.IsDir() {
		return nil, ErrNotDir
	}
	sub, err := d.root.OpenRoot(filepath.FromSlash(rel))
	if err != nil {
		return nil, mapErr(err)
	}
	return &Dir{dirHandle: dirHandle{sub}, rel: Join(d.rel, rel), info: infoOf(fi)}, nil
}

func (d *Dir) stat() (Info, error) {
	fi, err := d.root.Stat(".")
	if err != nil {
		return Info{}, mapErr(err)
	}
	return infoOf(fi), nil
}

func (d *Dir) close() error {
	if d.root == nil {
		return nil
	}
	err := d.root.Close()
	d.root = nil
	return err
}

func (d *Dir) openDir(name string) (*Dir, error) { return d.openSub(name) }

func (d *Dir) lstat(name string) (Info, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return Info{}, mapErr(err)
	}
	return infoOf(fi), nil
}

func (d *Dir) readDir() ([]Entry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, mapErr(err)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		out = append(out, Entry{Name: de.Name(), Type: de.Type()})
	}
	return out, mapErr(err)
}

// removeContents measures, then deletes each entry with os.Root.RemoveAll.
func (d *Dir) removeContents() (Usage, error) {
	u, _ := d.Usage(nil)
	ents, err := d.ReadDir()
	if err != nil {
		return Usage{}, err
	}
	for _, e := range ents {
		if err := d.root.RemoveAll(e.Name); err != nil {
			return u, mapErr(err)
		}
	}
	return u, nil
}

// removeEmptyChild skips the identity check when want is zero (Windows has
// no inode identity).
func (d *Dir) removeEmptyChild(name string, want Identity) error {
	info, err := d.Lstat(name)
	if err != nil {
		return err
	}
	if !info.IsDir() || (want != Identity{} && info.ID != want) {
		return ErrIdentity
	}
	return mapErr(d.root.Remove(name))
}

func (d *Dir) sync() error { return nil }

// osRefusal names the jail refusal an error from os.Root is, or nil.
func osRefusal(err error) *result.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotFound
	case isRootEscape(err):
		return ErrEscape
	}
	return nil
}

func isXdev(err error) bool   { return false }
func isNotDir(err error) bool { return errors.Is(err, ErrNotDir) }
