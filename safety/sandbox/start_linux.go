package sandbox

import (
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts a plain child in a new session (hence its own process
// group, and no controlling terminal) and kills it if the thread that
// started it dies, which happens only when the server dies: that thread is
// kept alive until the child has exited (see launch).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// child is a started process whose exit is observed without reaping it.
type child struct {
	cmd    *proc
	exited chan struct{} // closed once the direct child has exited (still unreaped)
}

// launch starts cmd from a goroutine locked to an OS thread that is not
// the main thread and stays alive until the child has exited: Pdeathsig
// fires when the creating thread, not the process, dies, so the thread
// must outlive the child for "the child dies with the server" to mean
// exactly that. The same function starts the helper of a confined run.
func launch(cmd *proc) (*child, error) {
	c := &child{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	onLockedThread(func() { c.startWait(started) })
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// onLockedThread runs body in a new goroutine locked to an OS thread that
// is not the main thread, and never unlocks it: a goroutine that exits
// while locked takes its thread with it, so whatever body does to the
// thread (confinement, a Pdeathsig tie) ends with it. The main thread is
// never used: the runtime cannot end it, so a locked goroutine returning
// there would leave it parked for ever. A goroutine that finds itself on
// the main thread keeps it occupied while a second goroutine locks
// another one, then releases it.
func onLockedThread(body func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			handed := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(handed)
				body()
			}()
			<-handed
			runtime.UnlockOSThread()
			return
		}
		body()
	}()
}

// startWait starts the command and waits, on its locked thread, for it to
// exit; it deliberately never unlocks the thread.
func (c *child) startWait(started chan<- error) {
	if err := c.cmd.start(); err != nil {
		started <- startError(err)
		return
	}
	started <- nil
	waitExited(c.cmd.p.Pid)
	close(c.exited)
}

// waitExited blocks until pid has exited, leaving it a zombie so that its
// pid (and process group id) stays reserved until reap.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// killGroup sends SIGKILL to the child's process group and to the child
// itself. It is safe until reap: the unreaped child holds the group id.
func (c *child) killGroup() {
	pid := c.cmd.p.Pid
	_ = unix.Kill(-pid, unix.SIGKILL)
	_ = c.cmd.p.Signal(os.Kill)
}

// reap collects the exited child's status.
func (c *child) reap() (*os.ProcessState, error) {
	return c.cmd.wait()
}

// signalOf names the signal that ended the process, if any.
func signalOf(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return unix.SignalName(ws.Signal())
	}
	return ""
}
