//go:build !linux

package sandbox

import (
	"os"
	"os/exec"
	"syscall"
)

// Probe returns 0: Landlock exists only on Linux.
func Probe() (int, error) { return 0, nil }

func netFilterAvailable() bool { return false }

// sysProcAttr returns nil: off Linux the child gets no process group of its
// own, so only the direct child is killed on timeout. Grandchildren may
// survive; this weaker guarantee is why "required" refuses here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// child is a started process; off Linux it is reaped as soon as it exits.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// launch starts cmd unconfined (abi is always 0 here).
func launch(_ *Spec, _ int, cmd *exec.Cmd) (*child, error) {
	if err := cmd.Start(); err != nil {
		return nil, startError(err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// killGroup kills the direct child only.
func (c *child) killGroup() {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Kill()
	}
}

// reap returns the status collected when the child exited.
func (c *child) reap() (*os.ProcessState, error) {
	<-c.exited
	return c.cmd.ProcessState, c.err
}

// signalOf names the signal that ended the process, if any.
func signalOf(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
