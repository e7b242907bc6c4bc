package organizer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
)

// planTool is plan_organize: the moves that would tidy the workspace, changing nothing.
func (s *Server) planTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("plan_organize",
		"Propose moving each file at the top of the workspace into its category folder (Category/name). Changes nothing, not even folders. Returns plan_id, the moves (src, dest, category, size) and the skips, each with code, reason, rule and layer: POLICY_DENIED or PATH_ESCAPE skips are never moved by any tool; NEEDS_EXPLICIT_REQUEST skips are left alone unless the user names them (move_file). Paths are relative to the workspace. Pass plan_id to apply_plan.",
		mcpkit.Annotations{Title: "Plan organizing the workspace", ReadOnly: true, Idempotent: true},
		json.RawMessage(noArgsSchema)),
		Handler: mcpkit.Handle("plan_organize", s.log, s.planOrganize)}
}

// applyTool is apply_plan: a plan carried out once, re-checked file by file.
func (s *Server) applyTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("apply_plan",
		"Apply a plan from plan_organize, once. Every file is re-checked first (same file, size and modification time; destination still free; no symlink on the way); if anything changed since planning, nothing moves and the answer is STALE with a reason per file: plan again. Destination folders are created inside the workspace. Nothing is overwritten or deleted. The whole plan is one action for undo_last_action. Who confirms: under the shipped policy the agent does, by calling this tool (every move is undoable); when the policy sets [approval] apply_plan = \"human\", the server first asks the person through the client (MCP elicitation) with the moves per folder and the HIGH_RISK files, the agent cannot answer for them, and a declined plan_id stays usable.",
		mcpkit.Annotations{Title: "Apply an organize plan"},
		json.RawMessage(`{"type":"object","properties":{`+
			`"plan_id":{"type":"string","description":"The plan_id returned by plan_organize (single use)."}`+
			`},"required":["plan_id"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle("apply_plan", s.log, s.applyPlan)}
}

// PlannedMove is one move of a plan as shown.
type PlannedMove struct {
	Src      string `json:"src"`
	Dest     string `json:"dest"`
	Category string `json:"category"`
	Size     int64  `json:"size"`
}

// PlannedSkip is one skip of a plan as shown.
type PlannedSkip struct {
	Name   string         `json:"name"`
	Code   result.Code    `json:"code"`
	Reason string         `json:"reason"`
	Rule   string         `json:"rule"`
	Layer  organize.Layer `json:"layer"`
}

func (s *Server) planOrganize(ctx context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	p, err := s.org.Plan(ctx)
	if err != nil {
		return result.Fail("plan_organize", err, nil, start)
	}
	moves := make([]PlannedMove, 0, min(len(p.Moves), MaxListed))
	for _, m := range p.Moves[:min(len(p.Moves), MaxListed)] {
		moves = append(moves, PlannedMove{Src: m.Src, Dest: m.Dest, Category: m.Category, Size: m.Size})
	}
	skips := make([]PlannedSkip, 0, min(len(p.Skips), MaxListed))
	for _, k := range p.Skips[:min(len(p.Skips), MaxListed)] {
		skips = append(skips, PlannedSkip{Name: quoteIfBad(k.Name), Code: k.Skip.Code, Reason: k.Skip.Reason, Rule: k.Skip.Rule, Layer: k.Skip.Layer})
	}
	detail := map[string]any{"created": p.Created.Format(time.RFC3339), "moves": moves, "move_count": len(p.Moves),
		"skips": skips, "skip_count": len(p.Skips), "truncated": len(moves) < len(p.Moves) || len(skips) < len(p.Skips), "plan_id": p.ID}
	if p.ID == "" {
		return result.Success("plan_organize", fmt.Sprintf("nothing to move; %d skipped", len(p.Skips)), detail, start)
	}
	return result.Success("plan_organize", fmt.Sprintf("%d moves planned, %d skipped; nothing changed yet: call apply_plan with plan_id", len(p.Moves), len(p.Skips)), detail, start)
}

type applyArgs struct {
	PlanID string `json:"plan_id"`
}

// applyPlan is one call into the pipeline: organize.Organizer.Apply.
func (s *Server) applyPlan(ctx context.Context, req mcp.CallToolRequest, a applyArgs) result.OperationResult {
	start := time.Now()
	return answer(s.org.Apply(ctx, organize.ApplyRequest{PlanID: a.PlanID, Call: s.o.Asker.For(req)}), start)
}
