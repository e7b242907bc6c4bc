//go:build !linux

package jail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Guarantee describes the boundary this build enforces, for startup messages and docs.
const Guarantee = "os.Root fallback: no escapes by '..' or absolute paths; symlinks inside the root are followed; mounts are not detected; identity is best effort"

// Root is an open, canonical root directory.
type Root struct {
	dir  *Dir
	path string
}

// Dir is an open directory beneath a root.
type Dir struct {
	root *os.Root
	rel  string
	info Info
}

// OpenRoot opens the operator's root directory (see the Linux doc).
func OpenRoot(path string) (*Root, error) {
	if path == "" || !filepath.IsAbs(path) || badText(path) {
		return nil, ErrRootInvalid
	}
	path = filepath.Clean(path)
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, ErrRootNotDir
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, ErrRootSymlink
	}
	if !fi.IsDir() {
		return nil, ErrRootNotDir
	}
	canon, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, ErrRootNotDir
	}
	r, err := os.OpenRoot(canon)
	if err != nil {
		return nil, result.Wrap(result.PolicyDenied, "the root cannot be opened", err)
	}
	learnRootEscape(r)
	return &Root{dir: &Dir{root: r, rel: ".", info: infoOf(fi)}, path: canon}, nil
}

// Path returns the canonical absolute path of the root.
func (r *Root) Path() string { return r.path }

// Identity returns the root directory's identity (best effort off Linux).
func (r *Root) Identity() Identity { return r.dir.info.ID }

// Close releases the root.
func (r *Root) Close() error { return r.dir.root.Close() }

// Clean validates p against this root.
func (r *Root) Clean(p string) (string, error) { return Clean(r.path, p) }

// OpenDir opens the directory rel beneath the root.
func (r *Root) OpenDir(rel string) (*Dir, error) {
	if rel == "" || rel == "." {
		sub, err := r.dir.root.OpenRoot(".")
		if err != nil {
			return nil, mapErr(err)
		}
		return &Dir{root: sub, rel: ".", info: r.dir.info}, nil
	}
	return r.dir.openSub(rel)
}

// OpenFile opens a regular file rel beneath the root, read-only.
func (r *Root) OpenFile(rel string) (*os.File, error) {
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

// Lstat returns the lstat of rel beneath the root.
func (r *Root) Lstat(rel string) (Info, error) {
	if rel == "" || rel == "." {
		return r.dir.info, nil
	}
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
	return &Dir{root: sub, rel: Join(d.rel, rel), info: infoOf(fi)}, nil
}

// Rel returns the directory's path relative to its root.
func (d *Dir) Rel() string { return d.rel }

// Info returns the stat taken when the directory was opened.
func (d *Dir) Info() Info { return d.info }

// Stat re-reads the directory's stat.
func (d *Dir) Stat() (Info, error) {
	fi, err := d.root.Stat(".")
	if err != nil {
		return Info{}, mapErr(err)
	}
	return infoOf(fi), nil
}

// Close releases the directory.
func (d *Dir) Close() error {
	if d == nil || d.root == nil {
		return nil
	}
	err := d.root.Close()
	d.root = nil
	return err
}

// OpenDir opens the child directory name without following a symlink.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return d.openSub(name)
}

// Lstat returns the stat of the child name without following a symlink.
func (d *Dir) Lstat(name string) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	fi, err := d.root.Lstat(name)
	if err != nil {
		return Info{}, mapErr(err)
	}
	return infoOf(fi), nil
}

// ReadDir reads all entries of the directory.
func (d *Dir) ReadDir() ([]Entry, error) {
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

// RemoveContents deletes everything beneath d with os.Root.RemoveAll.
func (d *Dir) RemoveContents() (Usage, error) {
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

// RemoveEmptyChild removes the empty child directory name if it is still want.
func (d *Dir) RemoveEmptyChild(name string, want Identity) error {
	info, err := d.Lstat(name)
	if err != nil {
		return err
	}
	if !info.IsDir() || (want != Identity{} && info.ID != want) {
		return ErrIdentity
	}
	return mapErr(d.root.Remove(name))
}

// Sync is a no-op off Linux.
func (d *Dir) Sync() error { return nil }

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
