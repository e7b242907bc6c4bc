//go:build !windows

package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links followed while resolving one path, as
// the kernel does.
const maxLinks = 40

// resolvePath resolves the absolute path p component by component, as the
// kernel would, following symbolic links in the part of the path that
// exists; from the first component that does not exist (or cannot be
// examined) on, the rest is kept as written. It returns the resolved path
// and the location of every symbolic link it followed, so a caller can ask
// where each of them lives, not only where the path ends.
func resolvePath(p string) (string, []string, error) {
	if !filepath.IsAbs(p) {
		return "", nil, fmt.Errorf("audit: resolve %q: not an absolute path", p)
	}
	rest := strings.Split(filepath.Clean(p), "/")
	cur := "/"
	var links []string
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...), links, nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if len(links) == maxLinks {
			return "", links, fmt.Errorf("audit: resolve %q: %w", p, syscall.ELOOP)
		}
		links = append(links, next)
		target, err := os.Readlink(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...), links, nil
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, links, nil
}
