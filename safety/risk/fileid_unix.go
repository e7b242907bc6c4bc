//go:build unix

package risk

import (
	"io/fs"
	"os"
	"syscall"
)

// fileID returns the (device, inode) of fi, or zeros if the platform's
// stat does not carry them.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// readDirTyped lists an open directory with each entry's type taken from
// the directory itself. os.File.ReadDir stats every entry of a directory
// opened through an os.Root; reading a duplicate of the descriptor keeps
// the entry types the kernel already gave (d_type) and costs no stat.
// Info is never called on the returned entries.
func readDirTyped(f *os.File) ([]os.DirEntry, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f.ReadDir(-1)
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	defer nf.Close()
	return nf.ReadDir(-1)
}

// scanOpenFlags opens a file for the content scan: never through a
// symbolic link at its end, and never blocking (a FIFO swapped in after
// the lstat must not hang the scan).
const scanOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW
