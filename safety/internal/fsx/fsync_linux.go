//go:build linux

package fsx

import (
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Linux AIO ABI (linux/aio_abi.h).
const (
	iocbCmdFsync  = 2
	iocbFlagResfd = 1 << 0
	aioInFlight   = 128 // io_setup's nr_events: more at once fall back to fsync(2)
)

// iocb is struct iocb on a little-endian 64-bit system (amd64, arm64).
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   int32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

// aioSync is the process's one AIO context, the eventfd the kernel
// signals on each completion and the waiters by request.
type aioSync struct {
	ctx uintptr
	// efd is the eventfd, read through the poller; efdNum its number for
	// the requests (efd.Fd would put it back in blocking mode).
	efd    *os.File
	efdNum int
	mu     sync.Mutex
	next   uint64
	wait   map[uint64]func(unix.Errno)
}

// aio is set up on the first Fsync; nil where AIO cannot be used.
var aio = sync.OnceValue(func() *aioSync {
	var ctx uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, aioInFlight, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Syscall(unix.SYS_IO_DESTROY, ctx, 0, 0)
		return nil
	}
	a := &aioSync{ctx: ctx, efd: os.NewFile(uintptr(efd), "fsync-completions"), efdNum: efd, wait: map[uint64]func(unix.Errno){}}
	go a.reap()
	return a
})

// AsyncFsync reports whether Fsync waits through the poller here (AIO set
// up), for tests.
func AsyncFsync() bool { return aio() != nil }

func fsync(f *os.File) error { return startFsync(f)() }

func startFsync(f *os.File) func() error {
	done := make(chan unix.Errno, 1)
	if !submitFsync(f, func(e unix.Errno) { done <- e }) {
		return f.Sync
	}
	return func() error { return syncErr(f, <-done) }
}

func fsyncThen(f *os.File, then func(error)) {
	if !submitFsync(f, func(e unix.Errno) { then(syncErr(f, e)) }) {
		go func() { then(f.Sync()) }()
	}
}

// syncErr is the error (*os.File).Sync returns for errno e.
func syncErr(f *os.File, e unix.Errno) error {
	if e != 0 {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: e}
	}
	return nil
}

// submitFsync hands the fsync of f to the kernel; done receives its result
// on the reaping goroutine. false: AIO is not available or refused the
// request (EAGAIN: too many in flight; EINVAL: not fsync-able, as fsync(2)
// would say), and done is never called.
func submitFsync(f *os.File, done func(unix.Errno)) bool {
	a := aio()
	if a == nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	a.mu.Lock()
	id := a.next
	a.next++
	a.wait[id] = done
	a.mu.Unlock()
	var serr unix.Errno
	cerr := rc.Control(func(fd uintptr) {
		// The kernel takes its own reference to the file at submission:
		// f may be closed before the fsync completes.
		cb := iocb{data: id, opcode: iocbCmdFsync, fildes: uint32(fd), flags: iocbFlagResfd, resfd: uint32(a.efdNum)}
		p := &cb
		for {
			_, _, serr = unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, 1, uintptr(unsafe.Pointer(&p)))
			if serr != unix.EINTR {
				break
			}
		}
	})
	if cerr != nil || serr != 0 {
		a.mu.Lock()
		delete(a.wait, id)
		a.mu.Unlock()
		return false
	}
	return true
}

// reap delivers each completed fsync's result to its waiter: it parks in
// the poller on the eventfd, then collects every completion there is.
func (a *aioSync) reap() {
	var buf [8]byte
	var evs [32]ioEvent
	var zero unix.Timespec
	for {
		if _, err := a.efd.Read(buf[:]); err != nil {
			time.Sleep(time.Millisecond) // never expected (the eventfd is the process's for good); no busy loop
			continue
		}
		for {
			n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, 0, uintptr(len(evs)),
				uintptr(unsafe.Pointer(&evs[0])), uintptr(unsafe.Pointer(&zero)), 0)
			if e == unix.EINTR {
				continue
			}
			if e != 0 || n == 0 {
				break
			}
			for _, ev := range evs[:n] {
				a.mu.Lock()
				done, ok := a.wait[ev.data]
				delete(a.wait, ev.data)
				a.mu.Unlock()
				if ok {
					var e unix.Errno
					if ev.res < 0 {
						e = unix.Errno(-ev.res)
					}
					done(e)
				}
			}
			if int(n) < len(evs) {
				break
			}
		}
	}
}
