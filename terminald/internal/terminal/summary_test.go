package terminal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestContextSummaryInTerminald: terminald serves get_context_summary over
// its jail: a path inside is summarised, one outside the jail is
// PATH_ESCAPE, the answer's lists are bounded, and a cancelled call stops
// the walk and answers OPERATION_FAILED.
func TestContextSummaryInTerminald(t *testing.T) {
	e := newEnv(t)
	for i := range 60 {
		p := filepath.Join(e.Jail, "svc", fmt.Sprintf("k%02d", i), ".env")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("A=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		path any
		code string
	}{
		{"the jail", nil, "OK"},
		{"relative inside", "svc", "OK"},
		{"absolute inside", filepath.Join(e.Jail, "svc"), "OK"},
		{"absolute outside", e.State, "PATH_ESCAPE"},
		{"dot-dot out", "../", "PATH_ESCAPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			if tc.path != nil {
				args["path"] = tc.path
			}
			if r := e.call(t, "get_context_summary", args); r.Code != tc.code {
				t.Fatalf("code %s (%s), want %s", r.Code, r.Reason, tc.code)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		mcpkittest.WantSummaryBounded(t, e.c, "svc", 60, mcpkit.SummaryMaxListed)
	})
	t.Run("cancelled", func(t *testing.T) {
		if r := mcpkittest.CallCancelled(t, e.srv.MCP(), "get_context_summary", map[string]any{}); r.Code != "OPERATION_FAILED" {
			t.Fatalf("cancelled call answered %s: %s", r.Code, r.Reason)
		}
	})
}
