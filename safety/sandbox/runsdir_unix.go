//go:build unix

package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockSupported: flock is available.
const lockSupported = true

// lockFile takes an exclusive, non-blocking flock on path (creating it),
// and reports whether it got it. The lock lives as long as the returned
// descriptor: a process that dies drops it.
func lockFile(path string) (unlock func(), ok bool) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
