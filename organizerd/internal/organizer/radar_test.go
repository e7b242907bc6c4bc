package organizer

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/config"
)

// TestContextSummaryAndFileContextAreServed: organizerd carries the risk
// radar's summary tool and the file-context:// resource over its workspace,
// and the planner defers what the radar calls HIGH_RISK.
func TestContextSummaryAndFileContextAreServed(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put(".env", "DB_PASSWORD=canary-value-123\n")
	e.put("report.pdf", "%PDF-1.4\n")
	r := e.call("get_context_summary", map[string]any{})
	if r.Code != "OK" || !strings.Contains(r.Reason, ".env") {
		t.Fatalf("get_context_summary: %s %s", r.Code, r.Reason)
	}
	var req mcp.ReadResourceRequest
	req.Params.URI = "file-context://.env"
	res, err := e.c.ReadResource(context.Background(), req)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read file-context://.env: %v", err)
	}
	text := res.Contents[0].(mcp.TextResourceContents).Text
	if !strings.Contains(text, "HIGH_RISK") || strings.Contains(text, "canary-value-123") {
		t.Fatalf("descriptor of .env: %s", text)
	}
	req.Params.URI = "file-context://../etc/passwd"
	res, err = e.c.ReadResource(context.Background(), req)
	if err == nil && !strings.Contains(res.Contents[0].(mcp.TextResourceContents).Text, "PATH_ESCAPE") {
		t.Fatalf("escape was not refused: %+v", res.Contents)
	}
}
