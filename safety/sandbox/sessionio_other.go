//go:build !linux

package sandbox

import "syscall"

// signalGroup sends sig to the direct child (off Linux it has no process
// group of its own).
func (c *child) signalGroup(sig syscall.Signal) {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.p.Signal(sig)
	}
}
