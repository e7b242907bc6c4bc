package terminal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// sandboxProfileEnv is a terminald in the sandbox profile: shells, build
// tools and interpreters allowlisted, the Go cache on, network denied.
func sandboxProfileEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, func(o *Options) {
		o.Policy = command.Policy{Sandboxed: true,
			Allow: []string{"sh", "bash", "make", "cc", "go", "python3", "cat", "ls"}}
		o.Sandboxed = true
		o.Path = []string{"/usr/local/go/bin", "/usr/local/bin", "/usr/bin", "/bin"}
		o.Timeout = 120 * time.Second
		caches, err := sandbox.Caches(o.StateDir, o.Root.Path(), []string{"go"}, false)
		if err != nil {
			t.Fatal(err)
		}
		o.Caches = caches
	})
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSandboxProfileRunsGoTestOfflineWithWarmCache builds and tests a small
// module with the network denied; the second run is served from the
// persistent cache.
func TestSandboxProfileRunsGoTestOfflineWithWarmCache(t *testing.T) {
	e := sandboxProfileEnv(t)
	writeTree(t, e.Jail, map[string]string{
		"mod/go.mod":      "module example.com/m\n\ngo 1.25\n",
		"mod/sum.go":      "package m\n\nfunc Sum(a, b int) int { return a + b }\n",
		"mod/sum_test.go": "package m\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n",
	})
	r := e.runIn(t, "go test ./...", "mod")
	if r.Code != "OK" || r.exit() != 0 || !strings.Contains(r.str("stdout"), "ok") {
		t.Fatalf("go test in the sandbox: %s", r.text)
	}
	r = e.runIn(t, "go test ./...", "mod")
	if r.Code != "OK" || !strings.Contains(r.str("stdout"), "(cached)") {
		t.Fatalf("the second go test did not reuse the cache: %s", r.text)
	}
}

// TestSandboxProfileRunsMakeWithCC compiles and runs a C program through make.
func TestSandboxProfileRunsMakeWithCC(t *testing.T) {
	e := sandboxProfileEnv(t)
	writeTree(t, e.Jail, map[string]string{
		"c/hello.c":  "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n",
		"c/Makefile": "hello: hello.c\n\tcc -o hello hello.c\n\nrun: hello\n\t./hello\n",
	})
	r := e.runIn(t, "make run", "c")
	if r.Code != "OK" || r.exit() != 0 || !strings.Contains(r.str("stdout"), "hello from c") {
		t.Fatalf("make in the sandbox: %s", r.text)
	}
}

// TestSandboxProfileRunsPythonUnittest runs a python3 -m unittest suite.
func TestSandboxProfileRunsPythonUnittest(t *testing.T) {
	e := sandboxProfileEnv(t)
	writeTree(t, e.Jail, map[string]string{
		"py/test_add.py": "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n\nif __name__ == '__main__':\n    unittest.main()\n",
	})
	r := e.runIn(t, "python3 -m unittest -v", "py")
	if r.Code != "OK" || r.exit() != 0 || !strings.Contains(r.str("stderr"), "OK") {
		t.Fatalf("python3 -m unittest in the sandbox: %s", r.text)
	}
}
