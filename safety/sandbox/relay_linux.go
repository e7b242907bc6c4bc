package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"sync"
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
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox could not wait for its helper"}, nil, false
	}
	defer unix.Close(wake)
	var mu sync.Mutex
	var events []relayEvent
	post := func(e relayEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		_, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	stop := make(chan struct{})
	defer close(stop)
	backstop := make(chan time.Duration, 2)
	if rl.timeout > 0 {
		backstop <- rl.timeout + helperBackstop
	}
	// The watcher waits on channels only (no thread of its own while it
	// waits) and posts what happened.
	go func() {
		done, term := rl.ctx.Done(), rl.term
		var timer <-chan time.Time
		for {
			select {
			case <-stop:
				return
			case <-done:
				done = nil
				post(evCancel)
			case <-term:
				term = nil
				post(evTerm)
			case d := <-backstop:
				timer = time.After(d)
			case <-timer:
				timer = nil
				post(evBackstop)
			}
		}
	}()
	buf := make([]byte, 64<<10)
	answered, killed := false, false
	var deadline time.Time // after the answer: drainGrace; after a kill: helperBackstop
	for {
		if answered && rl.outFD < 0 && rl.errFD < 0 {
			return r, runErr, clean
		}
		fds := make([]unix.PollFd, 0, 4)
		if !answered {
			fds = append(fds, unix.PollFd{Fd: int32(rl.w.fd), Events: unix.POLLIN})
		}
		for _, fd := range []int{rl.outFD, rl.errFD} {
			if fd >= 0 {
				fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		fds = append(fds, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})
		wait := -1
		if !deadline.IsZero() {
			wait = max(int(time.Until(deadline).Milliseconds())+1, 0)
		}
		n, err := unix.Poll(fds, wait)
		if err == unix.EINTR {
			continue
		}
		if n == 0 && !deadline.IsZero() && !time.Now().Before(deadline) {
			if answered {
				rl.closePipes()
				return r, runErr, clean
			}
			// Killed, and still no answer: a second guard, never expected
			// to fire (only the helper holds the control socket).
			rl.closePipes()
			return helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox helper ended without an answer"}, runErr, false
		}
		for _, p := range fds {
			if p.Revents == 0 {
				continue
			}
			switch int(p.Fd) {
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
				deadline = time.Now().Add(drainGrace)
			case wake:
				var b [8]byte
				_, _ = unix.Read(wake, b[:])
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
						backstop <- helperBackstop
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
				rl.copyOut(int(p.Fd), buf)
			}
		}
	}
}

// copyOut reads what pipe fd holds (non-blocking) into its writer; at its
// end the pipe is closed. A failing writer is dropped and the pipe still
// read, so the command is never blocked by a full pipe.
func (rl *relay) copyOut(fd int, buf []byte) {
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
			return
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
			return
		}
		unix.Close(fd)
		*fdp = -1
		return
	}
}

func (rl *relay) closePipes() {
	for _, fd := range []*int{&rl.outFD, &rl.errFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
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
