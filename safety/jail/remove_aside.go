package jail

import (
	"errors"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
)

// AsidePrefix begins every name RemoveTree sets a directory aside under
// (Guard.Aside). A scan never lists a directory of such a name, and
// Root.FinishAside deletes the ones a crash left in a root's top directory.
const AsidePrefix = ".bastion-reclaim-"

// ErrAsideName refuses a Guard.Aside that is not AsidePrefix followed by a
// plain name.
var ErrAsideName = result.New(result.InternalError, "the name to set a directory aside under must begin with "+AsidePrefix+" and be a plain name")

// errAsideUnavailable: the root's top directory cannot take the directory
// in one rename (another filesystem, no permission, no RENAME_NOREPLACE), so
// it is deleted in place as before.
var errAsideUnavailable = errors.New("the directory cannot be renamed into the root's top directory")

// IsAside reports whether name is one RemoveTree sets directories aside
// under: AsidePrefix followed by at least one byte, and a valid plain name.
func IsAside(name string) bool {
	return len(name) > len(AsidePrefix) && strings.HasPrefix(name, AsidePrefix) &&
		!strings.ContainsAny(name, `/\`) && CheckName(name) == nil
}

// removeAside renames the verified target (base in parent) to g.Aside in
// the root's top directory and fsyncs both directories, then deletes it
// there through the verified fd. kill -9 or a power loss at any moment
// leaves the find either whole at its path or (partly) deleted under the
// aside name, which scans never list and FinishAside completes. If the
// deletion fails part-way (a mount inside, a permission), what is left is
// renamed back to its path, so it is listed and reported as before.
func (r *Root) removeAside(parent *Dir, base string, target *Dir, g Guard) (Usage, error) {
	top, err := r.OpenDir(".")
	if err != nil {
		return Usage{}, err
	}
	defer top.Close()
	if err := setAside(parent, base, top, g.Aside, g.Want); err != nil {
		if errors.Is(err, errAsideUnavailable) {
			return removeInPlace(parent, base, target, g.Want)
		}
		return Usage{}, staleOf(err)
	}
	_ = parent.Sync()
	_ = top.Sync()
	u, err := target.RemoveContents()
	if err != nil {
		_ = putBack(top, g.Aside, parent, base)
		return u, err
	}
	if err := top.RemoveEmptyChild(g.Aside, g.Want); err != nil {
		return u, staleOf(err)
	}
	u.Dirs++
	u.Bytes += target.Info().DiskBytes
	_ = top.Sync()
	return u, nil
}

// FinishAside deletes every directory named IsAside in the root's top
// directory: what RemoveTree set aside and a crash (kill -9, power loss)
// stopped it from finishing. Each is opened like any directory of the
// jail (never a symlink, never another mount; a mount inside is left in
// place) and deleted through its fd; an entry of such a name that is not a
// directory is left alone. It returns the names it removed and what they
// held; err is the first failure, the others are still attempted.
func (r *Root) FinishAside() (names []string, u Usage, err error) {
	top, err := r.OpenDir(".")
	if err != nil {
		return nil, Usage{}, err
	}
	defer top.Close()
	ents, err := top.ReadDir()
	if err != nil {
		return nil, Usage{}, err
	}
	var first error
	for _, e := range ents {
		if !IsAside(e.Name) {
			continue
		}
		if i, err := top.Lstat(e.Name); err != nil || !i.IsDir() {
			continue // a symlink or a file of that name is not ours
		}
		du, err := finishOne(top, e.Name)
		u.Add(du)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		names = append(names, e.Name)
	}
	if len(names) > 0 {
		_ = top.Sync()
	}
	return names, u, first
}

// finishOne deletes the set-aside directory name in top.
func finishOne(top *Dir, name string) (Usage, error) {
	d, err := top.OpenDir(name)
	if err != nil {
		return Usage{}, err
	}
	defer d.Close()
	u, err := d.RemoveContents()
	if err != nil {
		return u, err
	}
	if err := top.RemoveEmptyChild(name, d.Info().ID); err != nil {
		return u, err
	}
	u.Dirs++
	u.Bytes += d.Info().DiskBytes
	return u, nil
}
