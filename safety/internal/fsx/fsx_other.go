//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package fsx

import "os"

const (
	noFollow = 0
	canLock  = false
)

func openNoPoll(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func syncDir(string) error { return nil }

func flock(*os.File, bool) error { return nil }

func funlock(*os.File) error { return nil }

func fsync(f *os.File) error { return f.Sync() }

func startFsync(f *os.File) func() error { return f.Sync }

func fsyncThen(f *os.File, then func(error)) { go func() { then(f.Sync()) }() }

// AsyncFsync reports whether Fsync waits through the poller here: never
// off Linux.
func AsyncFsync() bool { return false }
