package mcpkit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// TestContextSummaryCapAndProgress: get_context_summary stops at the
// engine's cap ([radar] summary_max_entries) with OUTPUT_TRUNCATED, walks
// the whole tree when the cap is past it, and sends progress notifications
// for the client's token, the last one "done" with the entries walked.
func TestContextSummaryCapAndProgress(t *testing.T) {
	dir := t.TempDir()
	for i := range 30 {
		writeFile(t, dir, fmt.Sprintf("d%02d/f.go", i), "package x\n")
	}
	root, err := jail.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	for _, tc := range []struct {
		name string
		cap  int
		code result.Code
	}{
		{"below the tree", 20, result.OutputTruncated},
		{"past the tree", 1000, result.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := risk.NewEngine(risk.Options{SummaryMaxEntries: tc.cap})
			if err != nil {
				t.Fatal(err)
			}
			s := NewServer("radar-test", "1", "test")
			s.AddTools(ContextSummaryTool([]*jail.Root{root}, eng, nil))
			c := startClient(t, s)
			var mu sync.Mutex
			var got []map[string]any
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == "notifications/progress" {
					mu.Lock()
					got = append(got, n.Params.AdditionalFields)
					mu.Unlock()
				}
			})
			var req mcp.CallToolRequest
			req.Params.Name = "get_context_summary"
			req.Params.Arguments = map[string]any{}
			req.Params.Meta = &mcp.Meta{ProgressToken: "tok-7"}
			res, err := c.CallTool(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, mcpkittest.Parse(t, res), tc.code)
			// Notifications travel apart from the result: wait for "done".
			var last map[string]any
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				if len(got) > 0 {
					last = got[len(got)-1]
				}
				mu.Unlock()
				if last != nil && last["message"] == "done" {
					break
				}
			}
			want := float64(min(tc.cap, 60))
			if last["progressToken"] != "tok-7" || last["message"] != "done" || last["progress"] != want || last["total"] != want {
				t.Fatalf("last progress %v, want token tok-7, done, %v of %v", last, want, want)
			}
		})
	}
}
