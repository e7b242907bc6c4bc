package organizer

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
)

// moveTool is move_file: one file or folder the user named, moved.
func (s *Server) moveTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("move_file",
		"Move one file or folder the user named to a full destination path, both inside the workspace. Missing destination folders are created. Refused when the destination exists (never overwritten, never renamed around), when the source is a symbolic link or a special file, when a name has control characters, or when a path leaves the workspace. Use it for items plan_organize skipped with NEEDS_EXPLICIT_REQUEST. Undoable with undo_last_action. Who confirms: under the shipped policy the agent does, by calling this tool; when the policy sets [approval] move_file = \"human\", the server first asks the person through the client (MCP elicitation), and the agent cannot answer for them.",
		mcpkit.Annotations{Title: "Move one file"},
		json.RawMessage(`{"type":"object","properties":{`+
			`"src":{"type":"string","description":"The file or folder to move, relative to the workspace (or absolute inside it)."},`+
			`"dest":{"type":"string","description":"Its full new path, including the file name, relative to the workspace (or absolute inside it). Must not exist yet."}`+
			`},"required":["src","dest"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle("move_file", s.log, s.moveFile)}
}

type moveArgs struct {
	Src  string `json:"src"`
	Dest string `json:"dest"`
}

func (s *Server) moveFile(ctx context.Context, req mcp.CallToolRequest, a moveArgs) result.OperationResult {
	start := time.Now()
	m, refused := s.checkMove(a, start)
	if refused != nil {
		return *refused
	}
	k := s.confirm(ctx, req, organize.Ask{Action: "move_file", Key: keyMoveFile,
		Title: "Move this item inside the workspace? Nothing is deleted or overwritten, and undo_last_action moves it back.",
		Moves: []journal.Move{m}}, start)
	if k.stop != nil {
		return *k.stop
	}
	if k.v.Proceed {
		// The person may take minutes: the move is checked again, and
		// must still be the one they were asked about.
		again, refused := s.checkMove(a, start)
		if refused != nil {
			return k.done(*refused)
		}
		if !journal.SameMoves([]journal.Move{again}, []journal.Move{m}) {
			return k.done(result.Fail("move_file", jail.ErrChanged, map[string]any{"moved": 0}, start))
		}
	}
	var intentID string
	out, err := s.o.Journal.Do("move_file", m.Src+" -> "+m.Dst, []journal.Move{m}, s.intent("move_file", map[string]any{"src": m.Src, "dest": m.Dst}, &intentID))
	return k.done(s.report("move_file", intentID, out, err, start))
}

// checkMove applies the protection layer to the move the agent asked for.
func (s *Server) checkMove(a moveArgs, start time.Time) (journal.Move, *result.OperationResult) {
	m, skip := s.ws.CheckMove(a.Src, a.Dest)
	if skip != nil {
		r := result.With("move_file", skip.Code, skip.Reason,
			map[string]any{"src": quoteIfBad(a.Src), "dest": quoteIfBad(a.Dest), "rule": skip.Rule, "layer": skip.Layer}, start)
		return m, &r
	}
	return m, nil
}
