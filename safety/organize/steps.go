package organize

// The steps of the flows in pipeline.go, each small and in the order the
// flows take them: ask (and done), intent, report, finish.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/result"
)

// errNoCall refuses a flow the person must confirm when the request
// carries no tool call to ask through (a caller that did not bind
// approval.Asker.For): never the agent's to confirm.
var errNoCall = result.New(result.InternalError, "the server cannot ask the person from this call; nothing was moved")

// noEnd ends a step nobody observes.
var noEnd = func(result.Code) {}

// begin tells the Observer, if any, that step of tool starts.
func (g *Organizer) begin(ctx context.Context, tool string, s Step) (context.Context, func(result.Code)) {
	if g.o.Observer == nil {
		return ctx, noEnd
	}
	return g.o.Observer.Begin(ctx, tool, s)
}

// ended ends a step with out's code and returns out.
func ended(end func(result.Code), out Outcome) Outcome {
	end(out.Code)
	return out
}

// refused is the Outcome of a flow that err stopped at step, nothing moved.
func refused(tool string, s Step, err error) Outcome {
	code, reason := result.Classify(err)
	if code == result.OK {
		code, reason = result.InternalError, "the server reported a failure without a cause"
	}
	return Outcome{Tool: tool, Step: s, Code: code, Reason: reason}
}

// skipped is the Outcome of a move the protection layer refused.
func skipped(tool string, s Step, sk *Skip) Outcome {
	return Outcome{Tool: tool, Step: s, Code: sk.Code, Reason: sk.Reason, Refusal: sk}
}

// byAgent is detail.approval when the agent's own call is the confirmation.
func byAgent(key string) *approval.Approval {
	return &approval.Approval{Asked: false, By: string(approval.Agent), Key: key}
}

// asks reports whether the person confirms what key covers.
func (g *Organizer) asks(key string) bool {
	if g.o.Asker == nil {
		return false
	}
	if key == KeyApplyPlan {
		return g.o.ApplyPlan == approval.Human
	}
	return g.o.MoveFile == approval.Human
}

// ask is the one place the person is asked: the question is built from
// server-side facts only (Workspace.Question) and asked through call. It
// returns the verdict to act on (Proceed or ByAgent), or the Outcome to
// answer with: a refusal, or Pending for a 2026-07-28 client. An
// Outcome that follows a verdict passes through done.
func (g *Organizer) ask(ctx context.Context, call approval.Call, a Ask) (approval.Verdict, *Outcome) {
	ctx, end := g.begin(ctx, a.Action, StepAsk)
	if call.Ask == nil {
		out := ended(end, refused(a.Action, StepAsk, errNoCall))
		return approval.Verdict{}, &out
	}
	v := call.Ask(ctx, g.ws.Question(a))
	switch {
	case v.Pending:
		end(result.NeedsExplicitRequest)
		return v, &Outcome{Tool: a.Action, Step: StepAsk, Pending: true}
	case v.Proceed, v.ByAgent:
		end(result.OK)
		return v, nil
	}
	out := ended(end, refused(a.Action, StepAsk, v.Err))
	out.Approval = v.Approval
	return v, &out
}

// done records an approved flow's outcome with the approval (after the
// flow's own outcome record) and sets detail.approval.
func done(v approval.Verdict, out Outcome) Outcome {
	if v.Proceed {
		v.Done(out.Code)
	}
	out.Approval = v.Approval
	return out
}

// intent returns the journal hook that writes the audit intent record. The
// journal calls it after its checks passed and before its begin record: a
// failure moves nothing (fail-closed).
func (g *Organizer) intent(ctx context.Context, tool string, fields map[string]any, idOut *string) journal.Hook {
	return func(a *journal.Action) error {
		_, end := g.begin(ctx, tool, StepIntent)
		f := map[string]any{"action_id": a.ID, "moves": len(a.Moves)}
		for k, v := range fields {
			f[k] = v
		}
		if len(a.Moves) <= 20 {
			f["paths"] = pathsOf(a.Moves)
		}
		id, err := g.o.Audit.Intent(tool, f)
		*idOut = id
		end(result.CodeOf(err))
		return err
	}
}

// intentAction is intent for an undo or redo: it names the action taken
// back or again.
func (g *Organizer) intentAction(ctx context.Context, tool string, idOut *string) journal.Hook {
	return func(a *journal.Action) error {
		return g.intent(ctx, tool, map[string]any{"of": a.Tool, "label": a.Label}, idOut)(a)
	}
}

func pathsOf(ms []journal.Move) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, strconv.Quote(m.Src)+" -> "+strconv.Quote(m.Dst))
	}
	return out
}

// stale is apply_plan's Outcome when anything changed since planning: the
// whole plan is stale and nothing moves.
func stale(failed []journal.Failure, planned int, s Step) Outcome {
	return Outcome{Tool: "apply_plan", Step: s, Code: result.Stale, Stale: true, Failed: failed,
		Reason: fmt.Sprintf("%d of %d planned moves no longer hold, so nothing was moved; call plan_organize again", len(failed), planned)}
}

// report turns the journal's outcome into the flow's: refused (one reason,
// or STALE when several files refused), partly done (OPERATION_FAILED) or
// done.
func (g *Organizer) report(tool string, res journal.Outcome, err error) Outcome {
	if res.Action == nil {
		out := refused(tool, StepJournal, err)
		out.Failed = res.Failed
		if len(res.Failed) > 1 {
			out.Code, out.Reason = result.Stale, "nothing was moved: "+result.Reason(err)
		}
		return out
	}
	out := Outcome{Tool: tool, Step: StepJournal, Action: res.Action, Failed: res.Failed}
	out.UndoDepth, out.RedoDepth = g.o.Journal.Depth()
	n := len(res.Action.Moves)
	if len(res.Failed) > 0 {
		out.Code, out.Reason = result.OperationFailed, fmt.Sprintf("moved %d, %d could not be moved (see failed); %s", n, len(res.Failed), nextStep(tool, true))
		return out
	}
	verb := map[string]string{"apply_plan": "moved", "move_file": "moved", "undo_last_action": "moved back", "redo_last_action": "moved again"}[tool]
	out.Code, out.Reason = result.OK, fmt.Sprintf("%s %d item(s); %s", verb, n, nextStep(tool, false))
	return out
}

// nextStep names the tool that takes back what tool just did: an undo is
// taken back by redo_last_action, anything else by undo_last_action.
// partial says only some items moved.
func nextStep(tool string, partial bool) string {
	switch {
	case tool == "undo_last_action" && partial:
		return "redo_last_action moves the moved-back ones again"
	case tool == "undo_last_action":
		return "redo_last_action moves them again"
	case partial:
		return "undo_last_action reverts the moved ones"
	default:
		return "undo_last_action reverts this"
	}
}

// finish writes the audit outcome record of a flow whose intent was
// written: its code and how many objects moved. It is written before the
// answer and fsync'd just after it (audit.Log.OutcomeLazy): the journal,
// not the audit log, drives recovery.
func (g *Organizer) finish(ctx context.Context, intentID string, out Outcome) Outcome {
	if intentID == "" {
		return out
	}
	_, end := g.begin(ctx, out.Tool, StepRecord)
	err := g.o.Audit.OutcomeLazy(intentID, out.Tool, out.Code, map[string]any{"moved": out.Moved()})
	if err != nil {
		g.o.Logger.Error("audit outcome not recorded", "action", out.Tool)
	}
	end(result.CodeOf(err))
	return out
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
