package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestBinaryKilledDuringRunLeavesNothing kills the server with SIGKILL
// while a command runs that has started a setsid descendant and a
// double-forked one: none of them survives, and the private directories the
// dead server left are removed when the next server starts.
func TestBinaryKilledDuringRunLeavesNothing(t *testing.T) {
	jail, state := t.TempDir(), t.TempDir()
	pol := policy(t, jail, "profile = \"sandbox\"\n[terminal.state]\ndir = "+fmt.Sprintf("%q", state)+
		"\n[terminal.allowlist]\ncommands = [\"sh\"]\n")
	tok := fmt.Sprintf("bastion-killed-%d", time.Now().UnixNano())
	c, cmd := mcpkittest.StartStdio(t, bin, cleanEnv(t), "--config", pol, "--log-level", "warn")
	line := fmt.Sprintf(`sh -c "setsid sh -c 'sleep 300; : %[1]s' & (sh -c 'sleep 300; : %[1]s' &); sleep 300; : %[1]s"`, tok)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "run_command"
		req.Params.Arguments = map[string]any{"command": line}
		_, _ = c.CallTool(context.Background(), req) // never answers: the server is killed
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(mcpkittest.Carrying(tok)) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the command's processes never started (%d seen)", len(mcpkittest.Carrying(tok)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	for deadline := time.Now().Add(3 * time.Second); len(mcpkittest.Carrying(tok)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			left := mcpkittest.Carrying(tok)
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v of the command outlived the server's SIGKILL", left)
		}
	}
	runs := filepath.Join(state, "runs")
	if left, _ := os.ReadDir(runs); len(left) != 1 {
		t.Fatalf("the killed server should have left its runs directory behind, found %v", left)
	}
	dead, _ := os.ReadDir(runs)
	c2 := startStdio(t, pol)
	if r := call(t, c2, "run_command", map[string]any{"command": "sh -c true"}); r.Code != "OK" {
		t.Fatalf("the next server: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(runs, dead[0].Name())); !os.IsNotExist(err) {
		t.Fatalf("the dead server's runs directory %s is still there after the next start", dead[0].Name())
	}
}
