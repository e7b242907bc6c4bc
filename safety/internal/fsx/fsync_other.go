//go:build !linux

package fsx

import "os"

func fsync(f *os.File) error { return f.Sync() }

func startFsync(f *os.File) func() error { return f.Sync }

func fsyncThen(f *os.File, then func(error)) { go func() { then(f.Sync()) }() }

// AsyncFsync reports whether Fsync waits through the poller here: never
// off Linux.
func AsyncFsync() bool { return false }
