// Package fsx holds the few file-system operations that Bastion's durable
// files share: the audit log and the organizer's journal both lock a file
// with flock, open without following a symbolic link, and fsync the
// directory that holds a file they created or renamed.
//
// Each operation is documented here once; the platform files hold the
// unexported implementations. Where a system lacks one (flock on Windows,
// a directory fsync, O_NOFOLLOW), the operation does what it can and says so
// in its doc: the callers document the weaker guarantee that follows.
package fsx

import (
	"errors"
	"os"
)

// NoFollow is the open(2) flag that makes opening a symbolic link at the
// last path component fail (ELOOP). It is 0 where the system has no such
// flag, and a link there is followed.
const NoFollow = noFollow

// CanLock reports whether Lock and TryLock take a real lock on this system.
// Where they do not (no flock), both return nil at once.
const CanLock = canLock

// ErrLocked is what TryLock returns when another open file already holds
// the lock.
var ErrLocked = errors.New("the file is locked by another open file")

// OpenNoPoll opens name like os.OpenFile, close-on-exec, but does not
// register the file with the runtime's poller: a regular file gains nothing
// from it, and the set-up costs three fcntl and a failing epoll_ctl for a
// file opened once per record. Where that cannot be avoided it is
// os.OpenFile.
func OpenNoPoll(name string, flag int, perm os.FileMode) (*os.File, error) {
	return openNoPoll(name, flag, perm)
}

// SyncDir fsyncs the directory dir, so that entries created, renamed or
// removed in it survive a crash. It returns the error of opening or syncing
// dir, and fails when dir is not a directory. Where directories cannot be
// fsync'd portably (off the flock systems: Windows and others) it does
// nothing and returns nil.
func SyncDir(dir string) error { return syncDir(dir) }

// Lock takes an exclusive flock on f, waiting for it. The lock belongs to
// f's open file description: a second os.OpenFile of the same file, in this
// process or another, does not share it, and the kernel drops it when f is
// closed or its process dies. Errors are *os.PathError with Op "flock".
func Lock(f *os.File) error { return flock(f, false) }

// TryLock takes the exclusive flock on f without waiting, and returns
// ErrLocked (wrapped in an *os.PathError) when another open file holds it.
func TryLock(f *os.File) error { return flock(f, true) }

// Unlock releases the lock Lock or TryLock took on f. Closing f releases it
// too.
func Unlock(f *os.File) error { return funlock(f) }

// Fsync is f.Sync (fsync(2)), waited for without holding an OS thread
// where the system allows it: on Linux the fsync is handed to the kernel as
// an asynchronous request (Linux AIO, IOCB_CMD_FSYNC, run by a kernel
// worker exactly as fsync(2) would run) and its completion is waited for
// through Go's poller. A goroutine blocked in fsync(2) holds a processor,
// which Go's monitor thread then checks on every 20 µs for as long as the
// fsync lasts, and hands off to another thread; a terminald call made two
// of them. Where AIO is missing or refused (no CONFIG_AIO, a seccomp
// filter, the system's aio-max-nr reached, too many in flight) Fsync is
// f.Sync.
func Fsync(f *os.File) error { return fsync(f) }

// StartFsync starts Fsync of f and returns the wait for its result, so
// that the caller can prepare what the fsync guards meanwhile. The wait
// must be called once, before f is closed where the fsync did not start
// (no AIO: the wait is then f.Sync itself).
func StartFsync(f *os.File) (wait func() error) { return startFsync(f) }

// FsyncThen fsyncs f in the background and calls then with the result, on
// the goroutine that collects the completions, or on a goroutine of its
// own where AIO is not available. then must not block: in particular it
// must not wait for a lock that a caller of Fsync may hold while it waits,
// since the same goroutine delivers that Fsync's result. f must stay open
// until then is called.
func FsyncThen(f *os.File, then func(error)) { fsyncThen(f, then) }
