package organizer

import (
	"fmt"
	"strconv"
	"time"

	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/result"
)

// intent returns the journal hook that writes the audit intent (fail-closed).
func (s *Server) intent(action string, fields map[string]any, idOut *string) journal.Hook {
	return func(a *journal.Action) error {
		f := map[string]any{"action_id": a.ID, "moves": len(a.Moves)}
		for k, v := range fields {
			f[k] = v
		}
		if len(a.Moves) <= 20 {
			f["paths"] = pathsOf(a.Moves)
		}
		id, err := s.o.Audit.Intent(action, f)
		*idOut = id
		return err
	}
}

func (s *Server) intentAction(action string, idOut *string) journal.Hook {
	return func(a *journal.Action) error {
		return s.intent(action, map[string]any{"of": a.Tool, "label": a.Label}, idOut)(a)
	}
}

func pathsOf(ms []journal.Move) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, strconv.Quote(m.Src)+" -> "+strconv.Quote(m.Dst))
	}
	return out
}

func capFailures(f []journal.Failure) []journal.Failure {
	if len(f) > MaxListed {
		return f[:MaxListed]
	}
	return f
}

// report turns a journal outcome into the tool's result and the audit outcome.
func (s *Server) report(action, intentID string, out journal.Outcome, err error, start time.Time) result.OperationResult {
	if out.Action == nil {
		detail := map[string]any{"moved": 0}
		if len(out.Failed) > 0 {
			detail["refused"] = capFailures(out.Failed)
		}
		r := result.Fail(action, err, detail, start)
		if len(out.Failed) > 1 {
			r = result.With(action, result.Stale, "nothing was moved: "+result.Reason(err), detail, start)
		}
		return s.finish(action, intentID, r)
	}
	moves := make([]PlannedMove, 0, min(len(out.Action.Moves), MaxListed))
	for _, m := range out.Action.Moves {
		if len(moves) >= MaxListed {
			break
		}
		moves = append(moves, PlannedMove{Src: m.Src, Dest: m.Dst, Size: m.State.Size})
	}
	detail := map[string]any{"action_id": out.Action.ID, "moved": len(out.Action.Moves), "moves": moves,
		"truncated": len(moves) < len(out.Action.Moves)}
	undo, redo := s.o.Journal.Depth()
	detail["undo_depth"], detail["redo_depth"] = undo, redo
	if len(out.Failed) > 0 {
		detail["failed"] = capFailures(out.Failed)
		return s.finish(action, intentID, result.With(action, result.OperationFailed,
			fmt.Sprintf("moved %d, %d could not be moved (see failed); %s", len(out.Action.Moves), len(out.Failed), nextStep(action, true)), detail, start))
	}
	verb := map[string]string{"apply_plan": "moved", "move_file": "moved", "undo_last_action": "moved back", "redo_last_action": "moved again"}[action]
	return s.finish(action, intentID, result.Success(action, fmt.Sprintf("%s %d item(s); %s", verb, len(out.Action.Moves), nextStep(action, false)), detail, start))
}

// nextStep names the tool that takes back what action just did: an undo is
// taken back by redo_last_action, anything else by undo_last_action. partial
// says only some items moved.
func nextStep(action string, partial bool) string {
	switch {
	case action == "undo_last_action" && partial:
		return "redo_last_action moves the moved-back ones again"
	case action == "undo_last_action":
		return "redo_last_action moves them again"
	case partial:
		return "undo_last_action reverts the moved ones"
	default:
		return "undo_last_action reverts this"
	}
}

func (s *Server) finish(action, intentID string, r result.OperationResult) result.OperationResult {
	if intentID != "" {
		fields := map[string]any{}
		if m, ok := r.Detail.(map[string]any); ok {
			fields["moved"] = m["moved"]
		}
		if err := s.o.Audit.OutcomeLazy(intentID, action, r.Code, fields); err != nil {
			s.log.Error("audit outcome not recorded", "action", action)
		}
	}
	return r
}
