package organizer

import (
	"time"

	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
)

// answer shows a pipeline Outcome as the tool's result: the pipeline's code
// and reason, and a detail that shows what moved (or why nothing did), at
// most MaxListed items per list. A pending question is answered by the
// input request already set on the call, so the result is not sent.
func answer(out organize.Outcome, start time.Time) result.OperationResult {
	return answerWith(out, shownDetail(out), start)
}

// answerWith is answer with the detail given; detail.approval is added
// when the pipeline reports who confirmed.
func answerWith(out organize.Outcome, detail map[string]any, start time.Time) result.OperationResult {
	if out.Pending {
		return result.OperationResult{}
	}
	if out.Approval != nil {
		detail["approval"] = out.Approval
	}
	return result.With(out.Tool, out.Code, out.Reason, detail, start)
}

// shownDetail is the detail of an Outcome: nothing for a refused plan id;
// the action, its moves and the undo and redo depths when something moved
// (with the moves that failed); otherwise moved 0, with the files that made
// the plan stale or the journal refuse.
func shownDetail(out organize.Outcome) map[string]any {
	switch {
	case out.Step == organize.StepPlanID:
		return map[string]any{}
	case out.Action != nil:
		n := min(len(out.Action.Moves), MaxListed)
		moves := make([]PlannedMove, 0, n)
		for _, m := range out.Action.Moves[:n] {
			moves = append(moves, PlannedMove{Src: m.Src, Dest: m.Dst, Size: m.State.Size})
		}
		d := map[string]any{"action_id": out.Action.ID, "moved": len(out.Action.Moves), "moves": moves,
			"truncated": len(moves) < len(out.Action.Moves), "undo_depth": out.UndoDepth, "redo_depth": out.RedoDepth}
		if len(out.Failed) > 0 {
			d["failed"] = out.Failed[:min(len(out.Failed), MaxListed)]
		}
		return d
	case out.Stale:
		return map[string]any{"moved": 0, "stale": out.Failed[:min(len(out.Failed), MaxListed)]}
	}
	d := map[string]any{"moved": 0}
	if len(out.Failed) > 0 {
		d["refused"] = out.Failed[:min(len(out.Failed), MaxListed)]
	}
	return d
}
