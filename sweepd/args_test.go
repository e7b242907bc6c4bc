package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestBinaryTakesRootsAsArguments: each positional argument is a root, as
// with --root; that is how an MCP bundle passes a multi-directory setting.
// Refusals are the same as for --root.
func TestBinaryTakesRootsAsArguments(t *testing.T) {
	var roots []string
	for _, name := range []string{"a", "b"} {
		r := filepath.Join(t.TempDir(), name)
		for p, body := range map[string]string{"web/package.json": "{}", "web/node_modules/x/i.js": "x"} {
			f := filepath.Join(r, p)
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		roots = append(roots, r)
	}
	env := mcpkittest.CleanEnv(t, "XDG_STATE_HOME="+t.TempDir())
	c, _ := mcpkittest.StartStdio(t, bin, env, roots...)
	for _, r := range roots {
		res := mcpkittest.Call(t, c, "scan", map[string]any{"path": r})
		var d struct {
			Finds []struct {
				Path string `json:"path"`
			} `json:"finds"`
		}
		res.DecodeDetail(t, &d)
		if !res.OK || len(d.Finds) != 1 || d.Finds[0].Path != filepath.Join(r, "web", "node_modules") {
			t.Fatalf("scan %s: %s %s, finds %+v", r, res.Code, res.Reason, d.Finds)
		}
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(roots[0], link); err != nil {
		t.Fatal(err)
	}
	wantFatal(t, runBin(t, cleanEnv(t), roots[1], link), "symbolic link")
	wantFatal(t, runBin(t, cleanEnv(t), filepath.Join(t.TempDir(), "missing")), "root")
}
