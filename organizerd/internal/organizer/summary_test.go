package organizer

import (
	"fmt"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestContextSummaryInOrganizerd: organizerd's get_context_summary over its
// workspace: a path inside is summarised, one outside is PATH_ESCAPE, the
// answer's lists are bounded, and a cancelled call stops the walk and
// answers OPERATION_FAILED.
func TestContextSummaryInOrganizerd(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	for i := range 60 {
		e.put(fmt.Sprintf("svc/k%02d/.env", i), "A=1\n")
	}
	for _, tc := range []struct {
		name string
		path any
		code string
	}{
		{"the workspace", nil, "OK"},
		{"relative inside", "svc", "OK"},
		{"absolute inside", e.ws + "/svc", "OK"},
		{"absolute outside", e.outside, "PATH_ESCAPE"},
		{"dot-dot out", "../", "PATH_ESCAPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			if tc.path != nil {
				args["path"] = tc.path
			}
			if r := e.call("get_context_summary", args); r.Code != tc.code {
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
