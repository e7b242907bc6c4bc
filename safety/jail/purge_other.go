//go:build !linux

package jail

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/safety/result"
)

func purgeTree(path string, measure bool) (Usage, error) {
	if !measure {
		// Directories first get mode 0700 (WalkDir visits a directory before
		// reading it), so that os.RemoveAll can list and empty them.
		_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(path); err == nil {
			return Usage{}, nil
		} else {
			left, _ := purgeTree(path, true)
			return left, result.Wrap(result.OperationFailed, fmt.Sprintf("%d entries (%d bytes) could not be removed", left.Files+left.Dirs, left.Bytes), err)
		}
	}
	var u Usage
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if d == nil {
			return nil
		}
		if err != nil {
			u.Skipped++
			return nil
		}
		if fi, ierr := d.Info(); ierr == nil {
			u.Bytes += infoOf(fi).DiskBytes
		}
		if d.IsDir() {
			u.Dirs++
		} else {
			u.Files++
		}
		return nil
	})
	return u, nil
}
