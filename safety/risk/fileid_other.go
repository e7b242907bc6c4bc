//go:build !unix

package risk

import "io/fs"

// fileID has no (device, inode) pair to offer on this platform; the
// identity check after opening a file then rests on its type alone.
func fileID(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
