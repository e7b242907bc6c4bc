package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bastion-mcp/bastion/safety/jail"
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
// directory per tool under the server's state directory (never the jail
// and never the user's own caches), shared by every command of this jail
// so a second build reuses what the first fetched or compiled.
type CacheSet struct {
	// Paths are the directories to pass as Spec.WritePaths.
	Paths []string
	// Env are the NAME=VALUE pairs that point each tool at its cache.
	Env []string
	// Dir is the directory holding the caches: dir/caches/<jail key>, or
	// dir/caches when shared.
	Dir string
}

// Caches creates (if needed) the caches named in names ("go", "npm",
// "pip", "cargo") and returns them. An unknown name is an INVALID_REQUEST.
//
// They are per jail: under dir/caches/<key>, where key (CacheKey) is
// derived from the jail's canonical path and its identity (device and
// inode), so two servers with different jails and the same state
// directory never share a cache (one project's build cannot poison
// another's downloads or build results), and a jail removed and made
// again at the same path starts with empty caches. With shared, every
// jail's commands use dir/caches/<tool>, the location of earlier
// versions: faster for many checkouts of trusted code, and any command
// of any jail can plant what another jail's builds then use. Every
// directory is created with mode 0700.
func Caches(dir, jailRoot string, names []string, shared bool) (CacheSet, error) {
	cs := CacheSet{Dir: filepath.Join(dir, "caches")}
	if len(names) == 0 {
		return cs, nil
	}
	if !shared {
		key, err := CacheKey(jailRoot)
		if err != nil {
			return CacheSet{}, err
		}
		cs.Dir = filepath.Join(cs.Dir, key)
		if err := os.MkdirAll(cs.Dir, 0o700); err != nil {
			return CacheSet{}, result.Wrap(result.InternalError, "the jail's cache directory could not be created", err)
		}
		// For a person looking at the state directory: whose caches these are.
		// It lies beside the caches, where no command can write.
		_ = os.WriteFile(filepath.Join(cs.Dir, "jail"), []byte(jailRoot+"\n"), 0o600)
	}
	for _, n := range names {
		vars, ok := cacheVars[n]
		if !ok {
			return CacheSet{}, invalid("unknown cache %q (want go, npm, pip or cargo)", n)
		}
		base := filepath.Join(cs.Dir, n)
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

// CacheKey is the name of a jail's cache directory: "jail-", the jail
// directory's base name (letters, digits, '.', '_' and '-' only, at most
// 32 of them) for a person to recognise, "-", and 16 hex digits of a
// SHA-256 over the jail's canonical path (symbolic links resolved, as
// jail.OpenRoot opens it) and its device and inode numbers. The path keeps
// two jails apart; the identity gives a jail deleted and created again at
// the same path fresh caches (an inode number reused by the file system
// at the same path would map to the old ones). It refuses
// (INVALID_REQUEST) a jail it cannot open.
func CacheKey(jailRoot string) (string, error) {
	r, err := jail.OpenRoot(filepath.Clean(jailRoot))
	if err != nil {
		return "", result.Wrap(result.InvalidRequest, "the jail cannot be opened to key its caches", err)
	}
	defer r.Close()
	id := r.Identity()
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", r.Path(), id.Dev, id.Ino))
	var b strings.Builder
	for _, c := range filepath.Base(r.Path()) {
		if b.Len() >= 32 {
			break
		}
		if c == '.' || c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		}
	}
	return "jail-" + b.String() + "-" + hex.EncodeToString(sum[:8]), nil
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
