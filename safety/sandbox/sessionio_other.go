//go:build !linux

package sandbox

import (
	"os"
	"syscall"

	"github.com/bastion-mcp/bastion/safety/result"
)

// signalGroup sends sig to the direct child (off Linux it has no process
// group of its own).
func (c *child) signalGroup(sig syscall.Signal) {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.p.Signal(sig)
	}
}

// ttyAttr does nothing off Linux: a terminal is only the command's stdio.
func ttyAttr(a *syscall.SysProcAttr) {}

// OpenPTY refuses off Linux: sessions have no terminal there.
func OpenPTY() (primary, secondary *os.File, err error) {
	return nil, nil, result.New(result.OperationFailed, "a terminal for a session (tty) is available on Linux only")
}
