package runner

import (
	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
)

// emptyDir reports whether dir is a directory (not a symbolic link to
// one) with no entries and its mode as made, setuid, setgid and sticky
// bits included (a run may have changed it).
// Five system calls: it runs after every command (giveBack), where
// os.Open's poller registration alone took four more.
func emptyDir(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&0o7777 != 0o700 {
		return false
	}
	return fsx.DirEmptyAt(fd)
}
