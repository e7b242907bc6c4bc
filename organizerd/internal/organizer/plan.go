package organizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/journal"
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

func (s *Server) planOrganize(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	d, err := s.o.Root.OpenDir(".")
	if err != nil {
		return result.Fail("plan_organize", err, nil, start)
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return result.Fail("plan_organize", err, nil, start)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	p := &plan{created: time.Now().UTC()}
	moves := []PlannedMove{}
	skips := []PlannedSkip{}
	skipCount := 0
	for _, e := range ents {
		if e.Type.IsDir() && s.o.Rules.IsCategoryFolder(e.Name) {
			continue // a destination, not something to organize
		}
		ev := s.ws.Evaluate(d, ".", e)
		if ev.Skip != nil {
			skipCount++
			if len(skips) < MaxListed {
				skips = append(skips, PlannedSkip{Name: quoteIfBad(e.Name), Code: ev.Skip.Code, Reason: ev.Skip.Reason, Rule: ev.Skip.Rule, Layer: ev.Skip.Layer})
			}
			continue
		}
		p.moves = append(p.moves, journal.Move{Src: e.Name, Dst: ev.Dest, State: ev.State})
		if len(moves) < MaxListed {
			moves = append(moves, PlannedMove{Src: e.Name, Dest: ev.Dest, Category: ev.Facts.Category, Size: ev.Size})
		}
	}
	detail := map[string]any{"created": p.created.Format(time.RFC3339), "moves": moves, "move_count": len(p.moves),
		"skips": skips, "skip_count": skipCount, "truncated": len(moves) < len(p.moves) || len(skips) < skipCount}
	if len(p.moves) == 0 {
		detail["plan_id"] = ""
		return result.Success("plan_organize", fmt.Sprintf("nothing to move; %d skipped", skipCount), detail, start)
	}
	id := s.plans.Issue(p)
	detail["plan_id"] = id
	return result.Success("plan_organize", fmt.Sprintf("%d moves planned, %d skipped; nothing changed yet: call apply_plan with plan_id", len(p.moves), skipCount), detail, start)
}

type applyArgs struct {
	PlanID string `json:"plan_id"`
}

func (s *Server) applyPlan(ctx context.Context, req mcp.CallToolRequest, a applyArgs) result.OperationResult {
	start := time.Now()
	if !s.asksPerson(keyApplyPlan) {
		return withApproval(s.applyNow(a.PlanID, start), byAgent(keyApplyPlan))
	}
	// The person is asked about the plan without consuming it: a declined
	// or unanswered question leaves the plan_id usable.
	p, err := s.plans.Peek(a.PlanID)
	if err != nil {
		return result.Fail("apply_plan", planIDRefusal(err), nil, start)
	}
	if !answering(req) {
		if failed := s.o.Journal.Check(p.moves); len(failed) > 0 {
			return s.stalePlan("", failed, len(p.moves), start) // not worth the person's time
		}
	}
	k := s.confirm(ctx, req, organize.Ask{Action: "apply_plan", Key: keyApplyPlan,
		Title:   "Apply this organize plan? Each item moves into its folder inside the workspace; nothing is deleted or overwritten, and undo_last_action takes the whole plan back.",
		IDLabel: "Plan", ID: a.PlanID, Moves: p.moves, PerFolder: true}, start)
	if k.stop != nil {
		return *k.stop
	}
	return k.done(s.applyNow(a.PlanID, start))
}

// applyNow consumes the plan and applies it: every file is re-checked
// against what was planned (and asked about) before anything moves.
func (s *Server) applyNow(planID string, start time.Time) result.OperationResult {
	p, err := s.plans.Take(planID)
	if err != nil {
		return result.Fail("apply_plan", planIDRefusal(err), nil, start)
	}
	var intentID string
	out, err := s.o.Journal.Do("apply_plan", planID, p.moves, s.intent("apply_plan", map[string]any{"plan_id": planID}, &intentID))
	if err != nil && out.Action == nil && len(out.Failed) > 0 {
		return s.stalePlan(intentID, out.Failed, len(p.moves), start)
	}
	return s.report("apply_plan", intentID, out, err, start)
}

// stalePlan is the answer when anything changed since planning: the whole
// plan is stale and nothing moves.
func (s *Server) stalePlan(intentID string, failed []journal.Failure, planned int, start time.Time) result.OperationResult {
	return s.finish("apply_plan", intentID, result.With("apply_plan", result.Stale,
		fmt.Sprintf("%d of %d planned moves no longer hold, so nothing was moved; call plan_organize again", len(failed), planned),
		map[string]any{"moved": 0, "stale": capFailures(failed)}, start))
}

// planIDRefusal words the id store's refusal of a plan_id for plans: the
// store's own words are about scan ids, and the next step for a plan is
// plan_organize, not a scan. The code and the error's identity stay.
func planIDRefusal(err error) error {
	var why string
	switch {
	case errors.Is(err, ids.ErrMalformed):
		why = "malformed plan_id: plan ids look like p-<24 hex digits> and come only from plan_organize"
	case errors.Is(err, ids.ErrUnknown):
		why = "unknown plan_id: it was never issued by this server (plans do not survive a restart); plan again with plan_organize"
	case errors.Is(err, ids.ErrUsed):
		why = "this plan was already applied; plan again with plan_organize for a fresh plan_id"
	case errors.Is(err, ids.ErrExpired):
		why = "this plan has expired; plan again with plan_organize for a fresh plan_id"
	default:
		return err
	}
	return result.Wrap(result.CodeOf(err), why, err)
}
