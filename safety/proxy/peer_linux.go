package proxy

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerPID returns the process id, in the server's PID namespace, of the
// process that connected c over a UNIX socket (SO_PEERCRED: the process
// that called connect, not whoever holds the socket now), or 0.
func peerPID(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}
