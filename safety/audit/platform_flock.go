//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"os"
	"syscall"
)

// oNoFollow makes open fail (ELOOP) on a symbolic link at the last component.
const oNoFollow = syscall.O_NOFOLLOW

// flock takes the exclusive lock on f that serialises appends across
// processes, waiting for it.
func flock(f *os.File) error { return flockOp(f, syscall.LOCK_EX) }

// funlock releases it.
func funlock(f *os.File) { _ = flockOp(f, syscall.LOCK_UN) }

func flockOp(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: ferr}
	}
	return nil
}

// syncDir fsyncs the directory dir, making entries created or renamed in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
