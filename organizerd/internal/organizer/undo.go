package organizer

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
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

func (s *Server) undo(ctx context.Context, req mcp.CallToolRequest, _ noArgs) result.OperationResult {
	return s.revert(ctx, req, "undo_last_action", time.Now())
}

func (s *Server) redo(ctx context.Context, req mcp.CallToolRequest, _ noArgs) result.OperationResult {
	return s.revert(ctx, req, "redo_last_action", time.Now())
}

// revert undoes or redoes the latest action. When the person confirms, they
// are asked about the moves it would make now, and it runs only if those
// are still exactly the moves it makes after the answer.
func (s *Server) revert(ctx context.Context, req mcp.CallToolRequest, tool string, begin time.Time) result.OperationResult {
	next, run, title := s.o.Journal.NextUndo, s.o.Journal.Undo, "Undo the latest action? Each item below moves back to where it was; nothing is deleted or overwritten, and redo_last_action moves them again."
	if tool == "redo_last_action" {
		next, run, title = s.o.Journal.NextRedo, s.o.Journal.Redo, "Redo the latest undone action? Each item below moves again; nothing is deleted or overwritten, and undo_last_action moves them back."
	}
	var intentID string
	hook := s.intentAction(tool, &intentID)
	k := asked{v: approval.Verdict{ByAgent: true, Approval: byAgent(keyMoveFile)}}
	if s.asksPerson(keyMoveFile) {
		a, err := next()
		if err != nil {
			return s.report(tool, "", journal.Outcome{}, err, begin)
		}
		k = s.confirm(ctx, req, organize.Ask{Action: tool, Key: keyMoveFile, Title: title,
			IDLabel: "Action", ID: strconv.FormatUint(a.ID, 10), Moves: a.Moves}, begin)
		if k.stop != nil {
			return *k.stop
		}
		if k.v.Proceed {
			hook = journal.Expect(a.Moves, hook)
		}
	}
	out, err := run(hook)
	return k.done(s.report(tool, intentID, out, err, begin))
}
