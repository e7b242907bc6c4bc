package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in a new session (hence its own process group,
// and no controlling terminal) and kills it if the thread that started it
// dies, which happens only when the server dies: that thread is kept alive
// until the child has exited (see launch).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// child is a started process whose exit is observed without reaping it.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the direct child has exited (still unreaped)
}

// launch starts cmd confined by a Landlock ruleset for abi (none when abi
// is 0), using a locked-thread fork:
//
//  1. a fresh goroutine locks itself to its OS thread and never unlocks;
//  2. it sets no_new_privs, installs the network seccomp filter when the
//     network is denied, and enforces the ruleset, on that thread only;
//  3. it starts cmd: the fork happens on that thread, so the child inherits
//     the thread's Landlock domain and is confined before it executes;
//  4. it waits (waitid with WNOWAIT) until the child has exited, then
//     returns; a goroutine that exits while locked takes its thread with it,
//     so the restriction never reaches another goroutine.
//
// The runtime never creates new threads from a locked thread (a template
// thread does that), so the confinement cannot spread to the server. The
// main thread is never used (see startOnOwnThread). The thread is kept
// until the child exits because Pdeathsig fires when the creating thread,
// not the process, dies.
func launch(s *Spec, abi int, cmd *exec.Cmd) (*child, error) {
	rs := -1
	filter := abi >= 4 && !s.Network && netFilterAvailable()
	if abi > 0 {
		var err error
		if rs, err = buildRuleset(s, abi); err != nil {
			return nil, err
		}
		defer unix.Close(rs)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go c.startOnOwnThread(rs, filter, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// startOnOwnThread is the body of launch's goroutine. It must not confine
// the main thread: the runtime cannot end that one, so a locked goroutine
// returning there leaves it parked for ever, Landlock domain included. When
// it finds itself on the main thread it keeps that thread occupied while a
// second goroutine locks another one, then releases it unconfined.
func (c *child) startOnOwnThread(rs int, filter bool, started chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		elsewhere := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(elsewhere)
			c.confineStartWait(rs, filter, started)
		}()
		<-elsewhere
		runtime.UnlockOSThread()
		return
	}
	c.confineStartWait(rs, filter, started)
}

// confineStartWait runs on a locked thread that is not the main thread and
// deliberately never unlocks it: the thread may carry no_new_privs, a
// seccomp filter and a Landlock domain, and ends when the goroutine returns.
func (c *child) confineStartWait(rs int, filter bool, started chan<- error) {
	if rs >= 0 {
		if err := restrictThread(rs, filter); err != nil {
			started <- err
			return
		}
	}
	if err := c.cmd.Start(); err != nil {
		started <- startError(err)
		return
	}
	started <- nil
	waitExited(c.cmd.Process.Pid)
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
	pid := c.cmd.Process.Pid
	_ = unix.Kill(-pid, unix.SIGKILL)
	_ = c.cmd.Process.Signal(os.Kill)
}

// reap collects the exited child's status.
func (c *child) reap() (*os.ProcessState, error) {
	err := c.cmd.Wait()
	return c.cmd.ProcessState, err
}

// signalOf names the signal that ended the process, if any.
func signalOf(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return unix.SignalName(ws.Signal())
	}
	return ""
}
