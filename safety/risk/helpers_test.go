package risk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
)

func newEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func write(t testing.TB, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func openRoot(t testing.TB, dir string) *jail.Root {
	t.Helper()
	r, err := jail.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func classifyPath(t testing.TB, e *Engine, root, rel string, isDir bool) Descriptor {
	t.Helper()
	d, err := e.ClassifyPath(root, rel, isDir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func hasReason(d Descriptor, want string) bool {
	for _, r := range d.Metadata.Reasons {
		if r == want {
			return true
		}
	}
	return false
}

// caseName is a subtest name for a path: '/' (which -run reads as a
// subtest separator) is shown as '∕'.
func caseName(rel string) string { return strings.ReplaceAll(rel, "/", "∕") }
