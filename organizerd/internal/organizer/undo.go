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
		"Revert the latest move_file or applied plan as one action, moving every file back to where it was. Refused, with nothing moved, if any original location is now occupied or any moved file has changed or gone since; the answer names each such file. Folders the action created are removed when empty.",
		mcpkit.Annotations{Title: "Undo the last action"},
		json.RawMessage(noArgsSchema)),
		Handler: mcpkit.Handle("undo_last_action", s.log, s.undo)}
}

// redoTool is redo_last_action: the latest undone action re-applied.
func (s *Server) redoTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("redo_last_action",
		"Re-apply the latest undone action, with the same checks as undo_last_action. Any new move or applied plan clears what can be redone.",
		mcpkit.Annotations{Title: "Redo the last undone action"},
		json.RawMessage(noArgsSchema)),
		Handler: mcpkit.Handle("redo_last_action", s.log, s.redo)}
}

func (s *Server) undo(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	var intentID string
	out, err := s.o.Journal.Undo(s.intentAction("undo_last_action", &intentID))
	return s.report("undo_last_action", intentID, out, err, start)
}

func (s *Server) redo(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	var intentID string
	out, err := s.o.Journal.Redo(s.intentAction("redo_last_action", &intentID))
	return s.report("redo_last_action", intentID, out, err, start)
}
