//go:build !linux && !windows

package jail

import (
	"io/fs"
	"syscall"
)

func infoOf(fi fs.FileInfo) Info {
	i := Info{Name: fi.Name(), Mode: fi.Mode(), Size: fi.Size(), DiskBytes: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		i.ID = Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
		i.DiskBytes = int64(st.Blocks) * 512
	}
	return i
}
