//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package audit

import "os"

// oNoFollow is not available here: a symbolic link at the log file itself
// is followed. This is one of the documented weaker guarantees off Linux.
const oNoFollow = 0

// openFileNoPoll is os.OpenFile here.
func openFileNoPoll(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// flock is a no-op here: one log must have one writing process. The
// in-process mutex still serialises the writers of one Log.
func flock(*os.File) error { return nil }

func funlock(*os.File) {}

// syncDir is a no-op here: directories cannot be fsync'd portably.
func syncDir(string) error { return nil }
