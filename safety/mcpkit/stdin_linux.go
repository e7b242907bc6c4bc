package mcpkit

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// stdin is what stdio mode reads the client's messages from: standard
// input as a file Go's poller waits on when it is a pipe or a socket (what
// an MCP client hands its server), so that a read parks its goroutine
// instead of holding an OS thread blocked in read(2). A thread blocked
// there kept the runtime's monitor waking every 20 µs while the server was
// busy: 16% of terminald's CPU per run_command (issue 19). A terminal or a
// regular file is left as it is, its blocking mode being shared with
// whoever else holds it (a shell).
var stdin = sync.OnceValue(func() *os.File {
	var st unix.Stat_t
	if unix.Fstat(0, &st) != nil {
		return os.Stdin
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return os.Stdin
	}
	if unix.SetNonblock(0, true) != nil {
		return os.Stdin
	}
	// Kept for the life of the process (the package variable holds it), so
	// that no finalizer ever closes descriptor 0.
	return os.NewFile(0, "/dev/stdin")
})
