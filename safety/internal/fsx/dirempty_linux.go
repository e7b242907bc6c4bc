//go:build linux

package fsx

import "golang.org/x/sys/unix"

// DirEmptyAt reads the directory open at fd from its start (so a
// descriptor kept between calls sees what was made since) and reports
// whether it holds nothing but "." and "..": an lseek and a getdents64
// or two, no allocation. false when the directory cannot be read.
func DirEmptyAt(fd int) bool {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
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
