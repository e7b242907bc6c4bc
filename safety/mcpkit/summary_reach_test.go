package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// TestContextSummaryPathWithSeveralRoots: with several roots a path is
// absolute inside one of them (a relative one is INVALID_REQUEST, like
// sweepd's scan), and a path outside every root is PATH_ESCAPE.
func TestContextSummaryPathWithSeveralRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, b, "app/.env", "A=1\n")
	c := radarServer(t, &bytes.Buffer{}, a, b)
	for _, tc := range []struct {
		name string
		path string
		code result.Code
	}{
		{"absolute inside the second root", filepath.Join(b, "app"), result.OK},
		{"relative", "app", result.InvalidRequest},
		{"absolute outside every root", t.TempDir(), result.PathEscape},
		{"dot-dot out of a root", filepath.Join(b, "..", ".."), result.PathEscape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, call(t, c, "get_context_summary", map[string]any{"path": tc.path}), tc.code)
		})
	}
}

// TestContextSummaryAnswerIsBounded: 120 high-risk files are counted, but
// the answer lists SummaryMaxListed of them and counts the rest as omitted.
func TestContextSummaryAnswerIsBounded(t *testing.T) {
	root := t.TempDir()
	for i := range 120 {
		writeFile(t, root, fmt.Sprintf("k%03d/.env", i), "A=1\n")
	}
	r := call(t, radarServer(t, &bytes.Buffer{}, root), "get_context_summary", map[string]any{})
	wantCode(t, r, result.OK)
	var detail struct {
		Summaries []risk.Summary `json:"summaries"`
	}
	if err := json.Unmarshal(r.Detail, &detail); err != nil || len(detail.Summaries) != 1 {
		t.Fatalf("detail: %s", r.Detail)
	}
	s := detail.Summaries[0]
	if s.Counts[risk.HighRisk] != 120 || len(s.HighRisk) != SummaryMaxListed || s.Omitted[risk.HighRisk] != 120-SummaryMaxListed {
		t.Fatalf("counted %d, listed %d, omitted %d; want 120, %d, %d",
			s.Counts[risk.HighRisk], len(s.HighRisk), s.Omitted[risk.HighRisk], SummaryMaxListed, 120-SummaryMaxListed)
	}
}

// TestContextSummaryCancelledStopsTheWalk: a call whose context is
// cancelled walks nothing and answers OPERATION_FAILED, never a partial
// summary presented as whole.
func TestContextSummaryCancelledStopsTheWalk(t *testing.T) {
	root := t.TempDir()
	for i := range 200 {
		writeFile(t, root, fmt.Sprintf("d%03d/f.go", i), "package x\n")
	}
	r, err := jail.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	eng, err := risk.NewEngine(risk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var req mcp.CallToolRequest
	req.Params.Name = "get_context_summary"
	req.Params.Arguments = map[string]any{}
	res, err := ContextSummaryTool([]*jail.Root{r}, eng, nil).Handler(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := mcpkittest.Parse(t, res)
	if got.Code != string(result.OperationFailed) || !res.IsError {
		t.Fatalf("cancelled call answered %s: %s", got.Code, got.Reason)
	}
}
