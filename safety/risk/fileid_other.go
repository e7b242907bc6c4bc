//go:build !unix

package risk

import (
	"io/fs"
	"os"
)

// fileID has no (device, inode) pair to offer on this platform; the cache
// key then rests on the path, size and modification time.
func fileID(fs.FileInfo) (dev, ino uint64) { return 0, 0 }

// readDirTyped lists an open directory.
func readDirTyped(f *os.File) ([]os.DirEntry, error) { return f.ReadDir(-1) }

// scanOpenFlags opens a file for the content scan.
const scanOpenFlags = os.O_RDONLY
