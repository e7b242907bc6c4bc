package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
)

// listTargetsTool is list_targets: the kinds of regenerable directories sweepd knows.
func (s *Server) listTargetsTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("list_targets",
		"List the kinds of regenerable directories sweepd recognises: for each, the directory names, the marker file that must sit beside it (a directory without its marker is never a find), the ecosystem, and the command that regenerates it. Read-only.",
		mcpkit.Annotations{Title: "List sweep targets", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)),
		Handler: mcpkit.Handle("list_targets", s.log, s.listTargets)}
}

func (s *Server) listTargets(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	type out struct {
		Kind       string   `json:"kind"`
		Dirs       []string `json:"dirs"`
		Markers    []string `json:"markers"`
		Inside     []string `json:"inside,omitempty"`
		Ecosystem  string   `json:"ecosystem"`
		Regenerate string   `json:"regenerate"`
	}
	list := make([]out, 0, len(s.targets))
	for _, t := range s.targets {
		list = append(list, out{t.Kind, t.Dirs, t.Markers, t.Inside, t.Ecosystem, t.Regenerate})
	}
	return result.Success("list_targets", fmt.Sprintf("%d target kinds", len(list)),
		map[string]any{"targets": list, "keep_file": KeepFile}, time.Time{})
}
