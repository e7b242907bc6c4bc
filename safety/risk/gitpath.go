package risk

import (
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// heldRoots keeps the roots ClassifyPath names by path open, so that its
// git facts (which read .git/index and .gitignore files through package
// jail) cost no open per call. A held root is re-checked after
// rootRecheck: when its path no longer names the directory held open, it
// is replaced, and closed once no call uses it. The engine closes them
// all when it is garbage collected.
type heldRoots struct {
	mu    sync.Mutex
	roots map[string]*heldRoot
}

type heldRoot struct {
	root    *jail.Root
	checked time.Time
	users   int
	stale   bool // replaced: closed when its last user releases it
}

// maxHeldRoots bounds the roots held open; past it, unused ones are closed.
const maxHeldRoots = 64

// heldRootsOf returns the engine's held roots, made on first use.
func (e *Engine) heldRootsOf() *heldRoots {
	e.git.heldOnce.Do(func() {
		h := &heldRoots{roots: map[string]*heldRoot{}}
		e.git.held = h
		runtime.AddCleanup(e, func(h *heldRoots) { h.closeAll() }, h)
	})
	return e.git.held
}

// acquire returns the root at the clean absolute path key, opened through
// jail, or nil when it cannot be opened. The caller must release it.
func (hs *heldRoots) acquire(key string) *heldRoot {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	now := time.Now()
	h := hs.roots[key]
	if h != nil && (now.Sub(h.checked) < rootRecheck || sameDir(key, h.root)) {
		h.checked = now
		h.users++
		return h
	}
	if h != nil {
		hs.drop(key, h)
	}
	r, err := jail.OpenRoot(key)
	if err != nil {
		return nil
	}
	if len(hs.roots) >= maxHeldRoots {
		for k, old := range hs.roots {
			hs.drop(k, old)
		}
	}
	h = &heldRoot{root: r, checked: now, users: 1}
	hs.roots[key] = h
	return h
}

// release ends one use of h.
func (hs *heldRoots) release(h *heldRoot) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.users--
	if h.stale && h.users == 0 {
		h.root.Close()
	}
}

// drop forgets h (held under key), closing it unless a call still uses it.
func (hs *heldRoots) drop(key string, h *heldRoot) {
	delete(hs.roots, key)
	h.stale = true
	if h.users == 0 {
		h.root.Close()
	}
}

func (hs *heldRoots) closeAll() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for k, h := range hs.roots {
		hs.drop(k, h)
	}
}

// sameDir reports whether path still names the directory r holds open
// (by identity; never when the platform gives none).
func sameDir(path string, r *jail.Root) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	dev, ino := fileID(fi)
	id := r.Identity()
	return dev|ino != 0 && id.Dev == dev && id.Ino == ino
}

// classifyPath is ClassifyPath's body: the rules in force at root, and the
// repository's git facts when root is a repository's top.
func (e *Engine) classifyPath(root, rel string, isDir bool) Descriptor {
	key := cleanKey(root)
	hs := e.heldRootsOf()
	h := hs.acquire(key)
	if h == nil {
		// Not openable: rules alone (the state falls back to no packs
		// that need markers, as before).
		return e.state(key, pathOpener(root)).describe(rel, isDir, nil, false, false)
	}
	defer hs.release(h)
	d := e.state(key, rootOpener(h.root)).describe(rel, isDir, nil, false, false)
	e.withGit(h.root, key, rel, isDir, &d)
	return d
}
