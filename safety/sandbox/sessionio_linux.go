package sandbox

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
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
// socket fd, with the passed descriptors (helperRun says which they are).
func sendCommand(fd int, msg []byte, passed []int) error {
	if len(passed) == 0 {
		_, err := unix.Write(fd, msg)
		return err
	}
	return unix.Sendmsg(fd, msg, unix.UnixRights(passed...), nil, 0)
}

// maxPassed bounds the descriptors a command message carries: stdout,
// stderr, stdin and the port-publishing socket.
const maxPassed = 4

// recvCommand reads the command message, in a buffer of its size as
// readMsg does, and returns it with the descriptors passed with it (at
// most maxPassed; any others are closed), close-on-exec. ok is false once
// the server has closed the socket, or for a message longer than maxMsg.
func recvCommand(fd int) (msg []byte, passed []int, ok bool) {
	var peek [1]byte
	var n int
	for {
		// MSG_PEEK without room for control data leaves the message and
		// its descriptors queued for the Recvmsg below.
		var err error
		n, _, _, _, err = unix.Recvmsg(fd, peek[:], nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 || n > maxMsg {
			return nil, nil, false
		}
		break
	}
	msg = make([]byte, n)
	oob := make([]byte, unix.CmsgSpace(4*4))
	var m, oobn int
	for {
		var err error
		m, oobn, _, _, err = unix.Recvmsg(fd, msg, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, nil, false
		}
		break
	}
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, cm := range msgs {
			fds, ferr := unix.ParseUnixRights(&cm)
			if ferr != nil {
				continue
			}
			for _, f := range fds {
				if len(passed) < maxPassed {
					passed = append(passed, f)
				} else {
					unix.Close(f)
				}
			}
		}
	}
	return msg, passed, m == n
}

// takePassed sorts the descriptors that came with the command (the write
// ends of its stdout and stderr, then helperRun Stdin, then Publish) and
// starts publishing ports when asked; a descriptor the message does not
// account for is closed.
func (h *helper) takePassed(passed []int) {
	take := func(want bool) int {
		if !want || len(passed) == 0 {
			return -1
		}
		fd := passed[0]
		passed = passed[1:]
		return fd
	}
	h.outFD, h.errFD = take(true), take(true)
	h.stdinFD = take(h.run.Stdin)
	if pub := take(h.run.Publish); pub >= 0 {
		go h.publishPorts(pub)
	}
	for _, fd := range passed {
		unix.Close(fd)
	}
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

// ttyAttr makes a, which starts a command whose descriptor 0 is a
// terminal, start it in a session of its own with that terminal as its
// controlling terminal (Spec.TTY); the session leader leads its own
// process group too, so the group kills reach it as before.
func ttyAttr(a *syscall.SysProcAttr) {
	a.Setpgid = false
	a.Setsid, a.Setctty, a.Ctty = true, true, 0
}

// OpenPTY opens a new pseudo-terminal of the host's devpts: the primary
// side, which the server keeps (reads the command's output, writes its
// input), and the secondary side, which a session with Spec.TTY hands to
// the command (Stdin), 80 columns by 24 rows, newlines not turned into
// CR LF. The secondary is opened
// through the primary (TIOCGPTPEER), never by a name another process
// could swap.
func OpenPTY() (primary, secondary *os.File, err error) {
	p, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, result.Wrap(result.OperationFailed, "no pseudo-terminal could be opened (/dev/ptmx)", err)
	}
	fail := func(err error) (*os.File, *os.File, error) {
		p.Close()
		return nil, nil, result.Wrap(result.OperationFailed, "the pseudo-terminal could not be set up", err)
	}
	rc, err := p.SyscallConn()
	if err != nil {
		return fail(err)
	}
	var sfd int
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr != nil {
			return
		}
		if ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); ierr != nil {
			return
		}
		// A newline stays a newline (no CR added): the output is read as
		// text, where a CR would only show as an escape.
		tio, terr := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if terr != nil {
			ierr = terr
			return
		}
		tio.Oflag &^= unix.ONLCR
		if ierr = unix.IoctlSetTermios(int(fd), unix.TCSETS, tio); ierr != nil {
			return
		}
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
		if errno != 0 {
			ierr = errno
			return
		}
		sfd = int(r)
	}); err != nil {
		return fail(err)
	}
	if ierr != nil {
		return fail(ierr)
	}
	return p, os.NewFile(uintptr(sfd), "pty-secondary"), nil
}

// closeInheritedOnExec marks every descriptor from first on close-on-exec:
// whatever the server itself inherited without that flag (a descriptor its
// own parent leaked into it) would otherwise pass through the helper to
// the command, whose only descriptors must be its stdin, stdout and
// stderr. close_range(2) where the kernel has it (5.11), otherwise each
// open descriptor in /proc/self/fd.
func closeInheritedOnExec(first int) {
	const closeRangeCloexec = 1 << 2 // CLOSE_RANGE_CLOEXEC
	if unix.CloseRange(uint(first), ^uint(0), closeRangeCloexec) == nil {
		return
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
}
