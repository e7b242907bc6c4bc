//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"os"
	"syscall"
)

// oNoFollow makes open fail (ELOOP) on a symbolic link at the last component.
const oNoFollow = syscall.O_NOFOLLOW

// openFileNoPoll opens like os.OpenFile (close-on-exec) but hands the fd
// to os.NewFile, which skips the runtime poller set-up (three fcntl and an
// epoll_ctl that fails for a regular file): the log is opened per record.
func openFileNoPoll(name string, flag int, perm os.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

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
