//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsx

import (
	"os"
	"syscall"
)

const (
	noFollow = syscall.O_NOFOLLOW
	canLock  = true
)

func openNoPoll(name string, flag int, perm os.FileMode) (*os.File, error) {
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "fsync", Path: dir, Err: syscall.ENOTDIR}
	}
	return d.Sync()
}

func flock(f *os.File, nonBlocking bool) error {
	how := syscall.LOCK_EX
	if nonBlocking {
		how |= syscall.LOCK_NB
	}
	err := flockOp(f, how)
	if nonBlocking && err == syscall.EWOULDBLOCK {
		err = ErrLocked
	}
	if err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

func funlock(f *os.File) error {
	if err := flockOp(f, syscall.LOCK_UN); err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

// flockOp runs flock(2) on f's descriptor, retrying on EINTR. It goes
// through SyscallConn so that f stays in the mode it was opened in (Fd
// would switch it to blocking).
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
	return ferr
}
