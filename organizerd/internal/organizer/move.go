package organizer

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

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

// moveFile is one call into the pipeline: organize.Organizer.Move. A
// refusal by the protection layer shows the paths as the agent wrote them.
func (s *Server) moveFile(ctx context.Context, req mcp.CallToolRequest, a moveArgs) result.OperationResult {
	start := time.Now()
	out := s.org.Move(ctx, organize.MoveRequest{Src: a.Src, Dest: a.Dest, Call: s.o.Asker.For(req)})
	if out.Refusal != nil {
		return answerWith(out, map[string]any{"src": quoteIfBad(a.Src), "dest": quoteIfBad(a.Dest),
			"rule": out.Refusal.Rule, "layer": out.Refusal.Layer}, start)
	}
	return answer(out, start)
}
