//go:build windows

package audit

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// resolvePath resolves the existing part of the absolute path p with
// filepath.EvalSymlinks and keeps the rest as written. Unlike the Unix
// version it cannot report the links passed on the way.
func resolvePath(p string) (string, []string, error) {
	p = filepath.Clean(p)
	var tail []string
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, tail...)...), nil, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{p}, tail...)...), nil, nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, tail...)...), nil, nil
		}
		tail = append([]string{filepath.Base(p)}, tail...)
		p = parent
	}
}
