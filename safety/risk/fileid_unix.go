//go:build unix

package risk

import (
	"io/fs"
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
