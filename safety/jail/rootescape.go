package jail

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
)

// rootEscape holds the error value os.Root reports for a path that leads out
// of the root. The standard library does not export it, so it is learned from
// os.Root itself (learnRootEscape) and escapes are then recognised by identity
// (isRootEscape), never by comparing message text. Only the os.Root fallback
// (jail_other.go) uses it; it builds everywhere so that its test runs on
// Linux too.
var rootEscape atomic.Value // error

// learnRootEscape records os.Root's escape error, once, from r: ".." always
// leads out of a root, and os.Root refuses it before touching the
// filesystem.
func learnRootEscape(r *os.Root) {
	if rootEscape.Load() != nil {
		return
	}
	_, err := r.Lstat("..")
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil {
		rootEscape.Store(pe.Err)
	}
}

// isRootEscape reports whether err is os.Root's refusal of a path that
// escapes the root (through "..", an absolute path or a symbolic link that
// leads outside).
func isRootEscape(err error) bool {
	esc, _ := rootEscape.Load().(error)
	return esc != nil && errors.Is(err, esc)
}
