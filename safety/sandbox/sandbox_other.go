//go:build !linux

package sandbox

import (
	"context"
	"os"
	"syscall"
)

// Probe returns 0: Landlock exists only on Linux.
func Probe() (int, error) { return 0, nil }

func filterAvailable() bool { return false }

// Preflight refuses "required" (there is no Landlock here) and otherwise
// describes the unconfined runs of this platform.
func Preflight(mode Mode, iso Isolation, net NetMode) (string, error) {
	p, err := plan(mode, iso, net)
	if err != nil {
		return "", err
	}
	return p.confinement, nil
}

// runConfined is never reached off Linux: plan returns ABI 0.
func runConfined(ctx context.Context, s *Spec, _ runPlan, env []string, out Outcome, _ *guard) (Outcome, error) {
	return runPlain(ctx, s, env, out)
}

// sysProcAttr returns nil: off Linux the child gets no process group of its
// own, so only the direct child is killed on timeout. Grandchildren may
// survive; this weaker guarantee is why "required" refuses here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// child is a started process; off Linux it is reaped as soon as it exits.
type child struct {
	cmd    *proc
	exited chan struct{}
	err    error
}

// launch starts cmd unconfined.
func launch(cmd *proc) (*child, error) {
	if err := cmd.start(); err != nil {
		return nil, startError(err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_, c.err = cmd.wait()
		close(c.exited)
	}()
	return c, nil
}

// killGroup kills the direct child only.
func (c *child) killGroup() {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.p.Kill()
	}
}

// reap returns the status collected when the child exited.
func (c *child) reap() (*os.ProcessState, error) {
	<-c.exited
	return c.cmd.state, c.err
}

// signalOf names the signal that ended the process, if any.
func signalOf(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

// Prepare does nothing off Linux: there is no helper to prepare.
func Prepare(Spec) {}

// DiscardPrepared does nothing off Linux.
func DiscardPrepared() {}

// memoryMechanism names what bounds a command's memory: off Linux, nothing
// but the process-group kill (describe is reached only with Landlock).
func memoryMechanism(Isolation, NetMode) string { return "memory: unbounded" }

// PrepareStats returns zeros: nothing is prepared off Linux.
func PrepareStats() (hits, misses uint64) { return 0, 0 }

// Kept reports whether a helper waits for a run in home: never here.
func Kept(string) bool { return false }
