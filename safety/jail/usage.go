package jail

import "github.com/bastion-mcp/bastion/safety/result"

// errUsageCancelled is the error of a measurement whose stop answered true.
var errUsageCancelled = result.New(result.OperationFailed, "cancelled")

// Usage measures the disk usage of everything beneath d (not d itself),
// never following a symlink and never entering another mount. The newest
// mtime seen is reported in Usage.Newest. It stops early when stop returns
// true (checked per directory); stop may be nil.
//
// Each entry is counted by CountEntry and each directory entered through
// EnterForUsage, so a walk that does more per entry (risk's summary) and
// uses the two measures exactly what Usage measures.
func (d *Dir) Usage(stop func() bool) (Usage, error) {
	var u Usage
	ents, err := d.ReadDir()
	if err != nil {
		return u, err
	}
	for _, e := range ents {
		if _, enter, _ := d.CountEntry(e.Name, &u); !enter {
			continue
		}
		c, err := d.EnterForUsage(e.Name, &u, stop)
		if err != nil {
			return u, err
		}
		if c == nil {
			continue
		}
		cu, err := c.Usage(stop)
		c.Close()
		u.Add(cu)
		if err != nil {
			return u, err
		}
	}
	return u, nil
}

// CountEntry adds the entry name of d to u the way Usage counts it: its
// disk bytes and modification time, and one file or one directory (a
// symlink counts as a file: it is never followed). An entry that cannot
// be stat'ed (vanished since it was listed, or a name CheckName refuses)
// or that is the root of another mount (statx then reports the mounted
// object, which is not part of this tree) is counted in u.Skipped only.
//
// It returns the entry's lstat and its error, and enter: whether Usage
// goes on into the entry, a directory of this mount. The caller that
// enters it does so with EnterForUsage.
func (d *Dir) CountEntry(name string, u *Usage) (info Info, enter bool, err error) {
	info, err = d.Lstat(name)
	if err != nil || info.MountRoot {
		u.Skipped++
		return info, false, err
	}
	u.Bytes += info.DiskBytes
	if info.ModTime.After(u.Newest) {
		u.Newest = info.ModTime
	}
	if !info.IsDir() {
		u.Files++
		return info, false, nil
	}
	u.Dirs++
	return info, true, nil
}

// EnterForUsage opens the child directory name, which CountEntry said to
// enter, as Usage does: first it asks stop (stop may be nil) and returns an
// error when stop answers true; then it opens the directory without
// following a symlink and without entering another mount. A directory that
// cannot be opened (gone, swapped for a symlink or a mount) is counted in
// u.Skipped and nil is returned with a nil error. The caller measures what
// is beneath the returned directory and closes it.
func (d *Dir) EnterForUsage(name string, u *Usage, stop func() bool) (*Dir, error) {
	if stop != nil && stop() {
		return nil, errUsageCancelled
	}
	c, err := d.OpenDir(name)
	if err != nil {
		u.Skipped++
		return nil, nil
	}
	return c, nil
}
