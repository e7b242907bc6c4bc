package runner

import "golang.org/x/sys/unix"

// emptyDir reports whether dir is a directory (not a symbolic link to
// one) with no entries and its mode as made, setuid, setgid and sticky
// bits included (a run may have changed it).
// Four system calls: it runs after every command (giveBack), where
// os.Open's poller registration alone took as many again.
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
	var buf [1024]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		// ParseDirent leaves out "." and "..".
		if _, count, _ := unix.ParseDirent(buf[:n], 1, nil); count > 0 {
			return false
		}
	}
}
