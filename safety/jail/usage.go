package jail

import "github.com/bastion-mcp/bastion/safety/result"

// Usage measures the disk usage of everything beneath d (not d itself),
// never following a symlink and never entering another mount. The newest
// mtime seen is reported in Usage.Newest. It stops early when stop returns
// true (checked per directory); stop may be nil.
func (d *Dir) Usage(stop func() bool) (Usage, error) {
	var u Usage
	ents, err := d.ReadDir()
	if err != nil {
		return u, err
	}
	for _, e := range ents {
		info, err := d.Lstat(e.Name)
		if err != nil || info.MountRoot {
			// Vanished, or a mount point: statx reports the mounted object,
			// which is not part of this tree.
			u.Skipped++
			continue
		}
		u.Bytes += info.DiskBytes
		if info.ModTime.After(u.Newest) {
			u.Newest = info.ModTime
		}
		if !info.IsDir() {
			u.Files++
			continue
		}
		u.Dirs++
		if stop != nil && stop() {
			return u, result.New(result.OperationFailed, "cancelled")
		}
		c, err := d.OpenDir(e.Name)
		if err != nil {
			u.Skipped++
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
