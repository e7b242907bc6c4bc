//go:build !linux

package runner

import "os"

// emptyDir reports whether dir is a directory (not a symbolic link to
// one) with no entries and its mode as made, setuid, setgid and sticky
// bits included (a run may have changed it).
func emptyDir(dir string) bool {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0o700 {
		return false
	}
	names, err := f.Readdirnames(1)
	return err != nil && len(names) == 0
}
