//go:build windows

package jail

import "io/fs"

// infoOf has no inode identity on Windows; Identity stays zero and identity
// checks degrade to type and name checks (documented).
func infoOf(fi fs.FileInfo) Info {
	return Info{Name: fi.Name(), Mode: fi.Mode(), Size: fi.Size(), DiskBytes: fi.Size(), ModTime: fi.ModTime()}
}
