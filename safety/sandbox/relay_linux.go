package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// relay copies the command's output to its writers and waits for the
// helper's answer, on the calling goroutine's thread: one poll(2) over the
// control socket, both output pipes and a wake-up descriptor, instead of a
// goroutine per pipe and one for the answer. Each of those was a thread
// woken when the command ended, a few hundred microseconds per command on
// a virtual machine whose other CPU sleeps (issue 19).
//
// A cancelled ctx sends the helper cancelMsg (runErr then says why, and
// out records a deadline), a closed term termMsg; a helper that does not
// answer within timeout plus helperBackstop (or helperBackstop after a
// cancel) is killed. Output is read until both pipes end, at most
// drainGrace after the answer (a descendant that kept a pipe open with
// landlock isolation). clean is false when anything but the answer ended
// the wait, or a message other than the command was sent: the helper is
// not kept.
type relay struct {
	ctx     context.Context
	w       *warm
	timeout time.Duration
	term    <-chan struct{}
	out     *Outcome
	// outFD and errFD are the read ends of the output pipes (-1 once
	// ended), copied to stdout and stderr.
	outFD, errFD   int
	stdout, stderr io.Writer
	// wt is the helper's waiter once the pipes are in it.
	wt *waiter
}

// relayEvent is what woke the relay besides the descriptors.
type relayEvent int

const (
	evCancel relayEvent = iota + 1
	evTerm
	evBackstop
)

func (rl *relay) run() (r helperResult, runErr error, clean bool) {
	clean = true
	// The helper's waiter (warm.poller), with the control socket, wake and,
	// for this run, both output pipes in it.
	wt, err := rl.w.poller()
	if err == nil {
		err = rl.w.watchCtl(true)
	}
	for _, fd := range []int{rl.outFD, rl.errFD} {
		if err == nil {
			if err = wt.add(fd); err == nil {
				rl.wt = wt
			}
		}
	}
	if err != nil {
		return helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox could not wait for its helper"}, nil, false
	}
	wake := rl.w.wake
	// The watcher may post after run has returned (the request's context
	// ends once the answer is out): under mu, a post after that writes
	// nothing, never to a descriptor the helper's teardown closed.
	var mu sync.Mutex
	var events []relayEvent
	closed := false
	post := func(e relayEvent) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		events = append(events, e)
		_, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	defer func() {
		mu.Lock()
		closed = true
		mu.Unlock()
	}()
	// Callbacks, not a goroutine waiting on channels: nothing to start per
	// run, and nothing left behind (each is stopped when run returns; one
	// that fires anyway posts nothing, above).
	stopCancel := context.AfterFunc(rl.ctx, func() { post(evCancel) })
	defer stopCancel()
	var timers []*time.Timer
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	backstopIn := func(d time.Duration) {
		timers = append(timers, time.AfterFunc(d, func() { post(evBackstop) }))
	}
	if rl.timeout > 0 {
		backstopIn(rl.timeout + helperBackstop)
	}
	if rl.term != nil {
		// A session's graceful stop.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-rl.term:
				post(evTerm)
			case <-stop:
			}
		}()
	}
	bp := msgBufs.Get().(*[]byte)
	defer msgBufs.Put(bp)
	buf := *bp
	answered, killed := false, false
	var deadline time.Time // after the answer: drainGrace; after a kill: helperBackstop
	for {
		if answered && rl.outFD < 0 && rl.errFD < 0 {
			return r, runErr, clean
		}
		ready, err := wt.wait(deadline)
		if err != nil { // the deadline passed (nothing else fails here)
			if answered {
				rl.closePipes()
				return r, runErr, clean
			}
			// Killed, and still no answer: a second guard, never expected
			// to fire (only the helper holds the control socket).
			rl.closePipes()
			return helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox helper ended without an answer"}, runErr, false
		}
		for _, fd := range ready {
			switch fd {
			case rl.w.fd:
				m, err := unix.Read(rl.w.fd, buf)
				if err == unix.EINTR || err == unix.EAGAIN {
					continue
				}
				if err != nil || m <= 0 || json.Unmarshal(buf[:m], &r) != nil {
					r = helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox helper ended without an answer"}
					clean = false
				}
				answered = true
				_ = rl.w.watchCtl(false) // its next message is the next run's
				deadline = time.Now().Add(drainGrace)
			case wake:
				rl.w.drainWake()
				mu.Lock()
				evs := events
				events = nil
				mu.Unlock()
				for _, e := range evs {
					switch {
					case answered:
					case e == evTerm:
						// A graceful stop (Spec.Terminate): the helper
						// signals the command and keeps supervising it.
						clean = false
						_, _ = unix.Write(rl.w.fd, []byte(termMsg))
					case e == evCancel:
						clean = false
						runErr = ctxError(rl.ctx, rl.out)
						_, _ = unix.Write(rl.w.fd, []byte(cancelMsg))
						backstopIn(helperBackstop)
					case e == evBackstop && !killed:
						// The helper did not answer in time: kill it. With
						// namespaces every process of the command dies with
						// it, and its death ends the read.
						clean, killed = false, true
						rl.w.c.killGroup()
						deadline = time.Now().Add(helperBackstop)
					}
				}
			default:
				if rl.copyOut(fd, buf) {
					rl.closePipe(fd)
				}
			}
		}
	}
}

// copyOut reads what pipe fd holds (non-blocking) into its writer and
// reports whether the pipe ended (the caller closes it). A failing writer
// is dropped and the pipe still read, so the command is never blocked by a
// full pipe.
func (rl *relay) copyOut(fd int, buf []byte) (ended bool) {
	fdp, wp := &rl.outFD, &rl.stdout
	if fd == rl.errFD {
		fdp, wp = &rl.errFD, &rl.stderr
	}
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return false
		}
		if n > 0 {
			if *wp != nil {
				if _, werr := (*wp).Write(buf[:n]); werr != nil {
					*wp = nil
				}
			}
			if n == len(buf) {
				continue
			}
			return false
		}
		*fdp = -1
		return true
	}
}

// closePipes closes the output pipes not ended yet.
func (rl *relay) closePipes() {
	for _, fd := range []int{rl.outFD, rl.errFD} {
		if fd >= 0 {
			rl.closePipe(fd)
		}
	}
}

// closePipe takes pipe fd (one of outFD and errFD) out of the helper's
// waiter, which is kept for its next run, and closes it.
func (rl *relay) closePipe(fd int) {
	if rl.wt != nil {
		rl.wt.remove(fd)
	}
	unix.Close(fd)
	if fd == rl.outFD {
		rl.outFD = -1
	}
	if fd == rl.errFD {
		rl.errFD = -1
	}
}

// drainWake reads what runs' callbacks wrote to w's wake.
func (w *warm) drainWake() {
	var b [8]byte
	_, _ = unix.Read(w.wake, b[:])
}

// relayPipes makes the output pipes of a confined run: raw descriptors,
// the read ends non-blocking for relay (the write ends, the command's
// stdout and stderr, stay blocking), all close-on-exec.
func relayPipes() (outR, outW, errR, errW int, err error) {
	var a, b [2]int
	if err = unix.Pipe2(a[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, -1, -1, result.Wrap(result.InternalError, errSetup+": the output pipes could not be made", err)
	}
	if err = unix.Pipe2(b[:], unix.O_CLOEXEC); err != nil {
		unix.Close(a[0])
		unix.Close(a[1])
		return -1, -1, -1, -1, result.Wrap(result.InternalError, errSetup+": the output pipes could not be made", err)
	}
	for _, fd := range []int{a[0], b[0]} {
		if err = unix.SetNonblock(fd, true); err != nil {
			for _, f := range []int{a[0], a[1], b[0], b[1]} {
				unix.Close(f)
			}
			return -1, -1, -1, -1, result.Wrap(result.InternalError, errSetup+": the output pipes could not be made", err)
		}
	}
	return a[0], a[1], b[0], b[1], nil
}

// waiter waits for any of a few descriptors to be readable without holding
// a thread: an epoll instance of its own, itself waited for through Go's
// poller (a goroutine blocked in poll(2) holds an OS thread, which the
// runtime's monitor then keeps checking on, every 20 µs while the server
// is busy).
type waiter struct {
	f   *os.File
	rc  syscall.RawConn
	ep  int
	evs [8]unix.EpollEvent
	fds []int
}

func newWaiter(fds ...int) (*waiter, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &waiter{ep: ep}
	for _, fd := range fds {
		if fd < 0 {
			continue
		}
		if err := w.add(fd); err != nil {
			unix.Close(ep)
			return nil, err
		}
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, err
	}
	w.f = os.NewFile(uintptr(ep), "relay-epoll")
	if w.rc, err = w.f.SyscallConn(); err != nil {
		w.f.Close()
		return nil, err
	}
	return w, nil
}

// add waits for fd too.
func (w *waiter) add(fd int) error {
	return unix.EpollCtl(w.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
}

// remove stops waiting for fd (before it is closed).
func (w *waiter) remove(fd int) { _ = unix.EpollCtl(w.ep, unix.EPOLL_CTL_DEL, fd, nil) }

// wait returns the readable descriptors, waiting until one is or until
// deadline (zero: none) passes, when it returns an error.
func (w *waiter) wait(deadline time.Time) ([]int, error) {
	_ = w.f.SetReadDeadline(deadline)
	w.fds = w.fds[:0]
	err := w.rc.Read(func(uintptr) bool {
		n, err := unix.EpollWait(w.ep, w.evs[:], 0)
		if err == unix.EINTR || (err == nil && n == 0) {
			return false // nothing yet: park until the poller says
		}
		for i := 0; i < n; i++ {
			w.fds = append(w.fds, int(w.evs[i].Fd))
		}
		return true
	})
	return w.fds, err
}

func (w *waiter) close() { w.f.Close() }
