package jail

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// The os.Root fallback recognises an escape by the identity of os.Root's own
// error value, learned from os.Root: this pins that the value it learns is
// the one os.Root reports for a symbolic link leading out, and that the same
// words in another error do not count.
func TestRootEscapeIsRecognisedByIdentity(t *testing.T) {
	tmp := t.TempDir()
	inside := filepath.Join(tmp, "root")
	must(t, os.MkdirAll(filepath.Join(inside, "d"), 0o755))
	must(t, os.MkdirAll(filepath.Join(tmp, "outside"), 0o755))
	must(t, os.Symlink("../../outside", filepath.Join(inside, "d", "out")))
	r, err := os.OpenRoot(inside)
	must(t, err)
	defer r.Close()
	learnRootEscape(r)

	_, escErr := r.Open("d/out/x")
	_, dotErr := r.Lstat("../outside")
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"symlink leading out", escErr, true},
		{"dot-dot", dotErr, true},
		{"same words, another error", &os.PathError{Op: "open", Path: "x", Err: errors.New(rootEscapeText(t))}, false},
		{"not found", os.ErrNotExist, false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := isRootEscape(c.err); got != c.want {
				t.Fatalf("isRootEscape(%v) = %v, want %v", c.err, got, c.want)
			}
			if !c.want {
				return
			}
			e := ErrEscape.FromOS(c.err)
			if !errors.Is(e, ErrEscape) || result.CodeOf(e) != result.PathEscape || result.Reason(e) != ErrEscape.Reason {
				t.Fatalf("ErrEscape.FromOS(%v) = %v", c.err, e)
			}
		})
	}
}

// rootEscapeText is the learned error's message, to build a look-alike.
func rootEscapeText(t *testing.T) string {
	esc, _ := rootEscape.Load().(error)
	if esc == nil {
		t.Fatal("os.Root's escape error was not learned")
	}
	return esc.Error()
}
