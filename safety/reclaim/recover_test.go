package reclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestRecoverFinishesWhatACrashSetAside: a set-aside directory in a root's
// top (what a reclaim killed part-way leaves) is deleted at start and
// recorded as a reclaim_recovered event; a root with nothing set aside
// gets no event.
func TestRecoverFinishesWhatACrashSetAside(t *testing.T) {
	dirs := []string{canonTemp(t), canonTemp(t)}
	aside := jail.AsidePrefix + "r-0123"
	testfs.Write(t, filepath.Join(dirs[0], aside, "m0", "f.js"), "half")
	testfs.Write(t, filepath.Join(dirs[1], "proj", "node_modules", "f.js"), "whole")
	var roots []*jail.Root
	for _, d := range dirs {
		r, err := jail.OpenRoot(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		roots = append(roots, r)
	}
	logPath := filepath.Join(t.TempDir(), "sweepd.audit.jsonl")
	alog, err := audit.Open(audit.Options{Path: logPath, Server: "sweepd", Roots: dirs})
	if err != nil {
		t.Fatal(err)
	}
	if n := Recover(roots, alog, nil); n != 1 {
		t.Fatalf("Recover finished %d, want 1", n)
	}
	alog.Close()
	if _, err := os.Lstat(filepath.Join(dirs[0], aside)); !os.IsNotExist(err) {
		t.Fatalf("the set-aside directory is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], "proj", "node_modules", "f.js")); err != nil {
		t.Fatalf("a find that was not set aside was touched: %v", err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), `"reclaim_recovered"`) != 1 || !strings.Contains(string(b), aside) {
		t.Fatalf("want one reclaim_recovered event naming %s:\n%s", aside, b)
	}
}

func canonTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
