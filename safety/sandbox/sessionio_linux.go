package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// A command with a standard input of its own (Spec.Stdin: a session's
// input) gets it through the helper: the descriptor travels with the
// command message on the control socket (SCM_RIGHTS), so a helper
// prepared before the command was known serves it too. The helper hands
// it to the command as descriptor 0 in place of /dev/null and closes its
// own copy once the command has started. A graceful stop (Spec.Terminate)
// is termMsg on the same socket: the helper sends SIGTERM to every process
// of the command and goes on supervising it.

// termMsg asks the helper to send SIGTERM to the command's processes.
const termMsg = "term"

// signalGroup sends sig to the child's process group and to the child. It
// is safe until reap: the unreaped child holds the group id.
func (c *child) signalGroup(sig syscall.Signal) {
	pid := c.cmd.p.Pid
	_ = unix.Kill(-pid, sig)
	_ = unix.Kill(pid, sig)
}

// sendCommand writes the command message msg to the helper's control
// socket fd, with stdin (when not negative) as its one passed descriptor.
func sendCommand(fd int, msg []byte, stdin int) error {
	if stdin < 0 {
		_, err := unix.Write(fd, msg)
		return err
	}
	return unix.Sendmsg(fd, msg, unix.UnixRights(stdin), nil, 0)
}

// recvCommand reads the command message into buf and returns its length
// and the descriptor passed with it (-1: none; any others are closed).
func recvCommand(fd int, buf []byte) (int, int, error) {
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return n, -1, err
	}
	passed := -1
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			fds, ferr := unix.ParseUnixRights(&m)
			if ferr != nil {
				continue
			}
			for _, f := range fds {
				if passed < 0 {
					passed = f
				} else {
					unix.Close(f)
				}
			}
		}
	}
	return n, passed, nil
}

// terminate sends SIGTERM to every process of the command: with namespaces
// every process of the PID namespace but the helper, otherwise the
// command's process group and the helper's other children's.
func (h *helper) terminate(cmdPid int) {
	if h.cfg.Isolation == IsolationNamespaces {
		_ = unix.Kill(-1, unix.SIGTERM)
		return
	}
	_ = unix.Kill(-cmdPid, unix.SIGTERM)
	_ = unix.Kill(cmdPid, unix.SIGTERM)
}
