package mcpkit

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

// pendingKey holds, for one tool call, an input request that replaces the
// tool's OperationResult (a question for the person, in the multi
// round-trip form of protocol 2026-07-28).
type pendingKey struct{}

type pending struct{ r *mcp.CallToolResult }

// SetInputRequired makes the current tool call answer with r, an "input
// required" result, instead of its OperationResult. It reports false when
// ctx is not a tool call made through Handle.
func SetInputRequired(ctx context.Context, r *mcp.CallToolResult) bool {
	p, ok := ctx.Value(pendingKey{}).(*pending)
	if !ok || r == nil {
		return false
	}
	p.r = r
	return true
}
