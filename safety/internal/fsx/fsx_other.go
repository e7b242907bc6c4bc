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
