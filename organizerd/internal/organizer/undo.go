package organizer

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
)

// undoTool is undo_last_action: the latest action reverted.
func (s *Server) undoTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("undo_last_action",
		"Revert the latest move_file or applied plan as one action, moving every file back to where it was. Refused, with nothing moved, if any original location is now occupied or any moved file has changed or gone since; the answer names each such file. Folders the action created are removed when empty. Who confirms: under the shipped policy the agent does, by calling this tool; when the policy sets [approval] move_file = \"human\", the server first asks the person through the client (MCP elicitation) about the moves it would make.",
		mcpkit.Annotations{Title: "Undo the last action"},
		json.RawMessage(noArgsSchema)),
		Handler: mcpkit.Handle("undo_last_action", s.log, s.undo)}
}

// redoTool is redo_last_action: the latest undone action re-applied.
func (s *Server) redoTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("redo_last_action",
		"Re-apply the latest undone action, with the same checks as undo_last_action. Any new move or applied plan clears what can be redone. Who confirms: as for undo_last_action ([approval] move_file).",
		mcpkit.Annotations{Title: "Redo the last undone action"},
		json.RawMessage(noArgsSchema)),
		Handler: mcpkit.Handle("redo_last_action", s.log, s.redo)}
}

// undo is one call into the pipeline: organize.Organizer.Undo.
func (s *Server) undo(ctx context.Context, req mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	return answer(s.org.Undo(ctx, s.o.Asker.For(req)), start)
}

// redo is one call into the pipeline: organize.Organizer.Redo.
func (s *Server) redo(ctx context.Context, req mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	return answer(s.org.Redo(ctx, s.o.Asker.For(req)), start)
}
