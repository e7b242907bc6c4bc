package jail

import (
	"errors"
	"path"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Guard is what must still hold, right before deletion, for RemoveTree to
// delete a directory.
type Guard struct {
	// Want is the identity recorded when the directory was found.
	Want Identity
	// Markers: at least one regular file whose name matches one of these
	// path.Match patterns must exist in MarkerDir (empty: no marker needed).
	Markers []string
	// MarkerDir is the root-relative directory holding the markers; empty
	// means the target's parent.
	MarkerDir string
	// Inside: each name must exist inside the target as a regular file
	// (e.g. pyvenv.cfg for a virtualenv).
	Inside []string
	// KeepFile, when set, refuses the deletion if a file of this name exists
	// in the target or in any of its ancestors up to the root.
	KeepFile string
	// Intent is called after every check passed and before anything is
	// deleted; if it fails, nothing is deleted and its error is returned
	// (the audit log's fail-closed hook).
	Intent func() error
	// Aside, when set, is the name (beginning with AsidePrefix) under which
	// RemoveTree first moves the directory into the root's top directory,
	// in one rename, before deleting it there: a crash leaves the find
	// whole at its path or set aside, never half-deleted at its path (see
	// remove_aside.go). Empty: the directory is deleted where it is.
	Aside string
}

// Refusals of RemoveTree's re-validation.
var (
	ErrStaleSymlink = result.New(result.Stale, "the directory has been replaced by a symbolic link since the scan")
	ErrStaleMount   = result.New(result.Stale, "the directory is now a mount point or on another device")
	ErrStaleGone    = result.New(result.Stale, "the directory no longer exists at this path")
	ErrStaleNotDir  = result.New(result.Stale, "the path is no longer a directory")
	ErrStaleMarker  = result.New(result.Stale, "the project marker beside the directory is gone, so it is no longer a regenerable artifact")
	ErrStaleInside  = result.New(result.Stale, "the file that identified this directory is gone from inside it")
	ErrKept         = result.New(result.PolicyDenied, "a .bastion-keep file protects this directory; remove that file to allow reclaiming")
)

// Verify opens the target rel (never following a symlink, never crossing a
// mount) and checks every condition of g. On success it returns the open
// parent and target directories; the caller must Close both.
func (r *Root) Verify(rel string, g Guard) (parent, target *Dir, err error) {
	if rel == "." || rel == "" {
		return nil, nil, result.New(result.PolicyDenied, "the root itself is never removed")
	}
	parentRel, base := Split(rel)
	parent, err = r.OpenDir(parentRel)
	if err != nil {
		return nil, nil, staleOf(err)
	}
	target, err = parent.OpenDir(base)
	if err != nil {
		parent.Close()
		return nil, nil, staleOf(err)
	}
	fail := func(e error) (*Dir, *Dir, error) {
		target.Close()
		parent.Close()
		return nil, nil, e
	}
	if target.Info().ID != g.Want {
		return fail(ErrIdentity)
	}
	if len(g.Markers) > 0 {
		md := parent
		if g.MarkerDir != "" && g.MarkerDir != parentRel {
			d, err := r.OpenDir(g.MarkerDir)
			if err != nil {
				return fail(ErrStaleMarker)
			}
			defer d.Close()
			md = d
		}
		if !hasMarker(md, g.Markers) {
			return fail(ErrStaleMarker)
		}
	}
	for _, name := range g.Inside {
		if i, err := target.Lstat(name); err != nil || !i.IsRegular() {
			return fail(ErrStaleInside)
		}
	}
	if g.KeepFile != "" && r.kept(rel, g.KeepFile) {
		return fail(ErrKept)
	}
	return parent, target, nil
}

// RemoveTree deletes the directory rel and everything beneath it, after
// Verify passed and g.Intent succeeded, through the verified fds: a swap of
// the path after verification cannot redirect the deletion. With g.Aside
// set, the directory is first renamed aside (see Guard.Aside).
func (r *Root) RemoveTree(rel string, g Guard) (Usage, error) {
	if g.Aside != "" && !IsAside(g.Aside) {
		return Usage{}, ErrAsideName
	}
	parent, target, err := r.Verify(rel, g)
	if err != nil {
		return Usage{}, err
	}
	defer parent.Close()
	defer target.Close()
	if g.Intent != nil {
		if err := g.Intent(); err != nil {
			return Usage{}, err
		}
	}
	_, base := Split(rel)
	if g.Aside != "" {
		return r.removeAside(parent, base, target, g)
	}
	return removeInPlace(parent, base, target, g.Want)
}

// removeInPlace deletes the verified target's contents, then its name base
// in parent if that is still the directory with identity want.
func removeInPlace(parent *Dir, base string, target *Dir, want Identity) (Usage, error) {
	u, err := target.RemoveContents()
	if err != nil {
		return u, err
	}
	if err := parent.RemoveEmptyChild(base, want); err != nil {
		// The contents are gone through the verified fd; the name was
		// swapped or removed in between: report what changed, as STALE.
		return u, staleOf(err)
	}
	u.Dirs++
	u.Bytes += target.Info().DiskBytes
	_ = parent.Sync()
	return u, nil
}

// kept reports whether keep exists in rel or any ancestor up to the root.
func (r *Root) kept(rel, keep string) bool {
	for cur := rel; ; {
		if i, err := r.Lstat(Join(cur, keep)); err == nil && !i.IsDir() {
			return true
		}
		if cur == "." {
			return false
		}
		cur, _ = Split(cur)
	}
}

// Kept is the exported form of the .bastion-keep check, for scans.
func (r *Root) Kept(rel, keep string) bool { return r.kept(rel, keep) }

func hasMarker(d *Dir, patterns []string) bool {
	for _, p := range patterns {
		if !hasMeta(p) {
			if i, err := d.Lstat(p); err == nil && i.IsRegular() {
				return true
			}
			continue
		}
	}
	ents, err := d.ReadDir()
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !MatchAny(patterns, e.Name) {
			continue
		}
		if i, err := d.Lstat(e.Name); err == nil && i.IsRegular() {
			return true
		}
	}
	return false
}

// MatchAny reports whether name matches any of the path.Match patterns.
func MatchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func hasMeta(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

// staleOf turns a failure to reach the target into the STALE reason that
// says what changed.
func staleOf(err error) error {
	switch {
	case errors.Is(err, ErrMount) || result.CodeOf(err) == result.PathEscape && isXdev(err):
		return ErrStaleMount
	case result.CodeOf(err) == result.PathEscape:
		return ErrStaleSymlink
	case result.CodeOf(err) == result.NotFound:
		if isNotDir(err) {
			return ErrStaleNotDir
		}
		return ErrStaleGone
	}
	return err
}
