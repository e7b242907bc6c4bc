package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
)

// cacheVars maps each persistent tool cache to the variables that point
// the tool at it (relative values are joined to the cache's directory).
var cacheVars = map[string][][2]string{
	"go": {{"GOCACHE", "build"}, {"GOMODCACHE", "mod"}, {"GOPATH", "gopath"},
		// A cached toolchain download would need the network; use the one installed.
		{"GOTOOLCHAIN", "=local"}},
	"npm":   {{"npm_config_cache", "npm"}},
	"pip":   {{"PIP_CACHE_DIR", "pip"}},
	"cargo": {{"CARGO_HOME", "cargo"}},
}

// CacheSet is the persistent, writable tool caches of the commands: one
// directory per tool under dir (the server's state directory, never the
// jail and never the user's own caches), shared by every command of this
// server so a second build reuses what the first fetched or compiled.
type CacheSet struct {
	// Paths are the directories to pass as Spec.WritePaths.
	Paths []string
	// Env are the NAME=VALUE pairs that point each tool at its cache.
	Env []string
}

// Caches creates (if needed) the caches named in names ("go", "npm",
// "pip", "cargo") under dir/caches and returns them. An unknown name is an
// INVALID_REQUEST.
func Caches(dir string, names []string) (CacheSet, error) {
	var cs CacheSet
	for _, n := range names {
		vars, ok := cacheVars[n]
		if !ok {
			return CacheSet{}, invalid("unknown cache %q (want go, npm, pip or cargo)", n)
		}
		base := filepath.Join(dir, "caches", n)
		if err := os.MkdirAll(base, 0o700); err != nil {
			return CacheSet{}, result.Wrap(result.InternalError, fmt.Sprintf("the %s cache directory could not be created", n), err)
		}
		cs.Paths = append(cs.Paths, base)
		for _, v := range vars {
			if v[1][0] == '=' {
				cs.Env = append(cs.Env, v[0]+v[1])
				continue
			}
			p := filepath.Join(base, v[1])
			if err := os.MkdirAll(p, 0o700); err != nil {
				return CacheSet{}, result.Wrap(result.InternalError, fmt.Sprintf("the %s cache directory could not be created", n), err)
			}
			cs.Env = append(cs.Env, v[0]+"="+p)
		}
	}
	return cs, nil
}

// Covered reports whether path lies beneath one of readPaths
// (DefaultReadPaths when empty), after resolving symbolic links in both:
// a program outside them cannot be executed in the sandbox.
func Covered(path string, readPaths []string) bool {
	if len(readPaths) == 0 {
		readPaths = DefaultReadPaths
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	for _, r := range readPaths {
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}
