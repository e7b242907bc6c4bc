package organize

// This file is organizerd's pipeline: one call per flow (Plan in plan.go;
// Apply, Move, Undo and Redo here), each holding every step in the one
// safe order, top to bottom. The server only decodes arguments and shows
// the Outcome. A new step of a flow belongs here, in its order, not in the
// server. The steps themselves are in steps.go.
//
// Following a plan id from apply_plan to the disk:
//
//	Apply → [when the person confirms: plans.Peek (the plan id, not used
//	up) → Journal.Check (same file, size, mtime; destination free) → ask
//	(approval.Call, the person's answer)] → applyNow: plans.Take (the plan
//	id, used up) → Journal.Do: the same checks again, then intent (the
//	audit intent, fail-closed), then the begin record and the renames
//	(jail.Mover) → report → finish (the audit outcome) → done (the
//	approval's outcome).

import (
	"context"
	"strconv"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/result"
)

// ApplyRequest is one apply_plan call.
type ApplyRequest struct {
	PlanID string
	// Call asks the person through the tool call (approval.Asker.For).
	Call approval.Call
}

// MoveRequest is one move_file call: src and dest relative to the
// workspace, or absolute inside it, as the agent wrote them.
type MoveRequest struct {
	Src, Dest string
	Call      approval.Call
}

// Outcome is what one flow did, for the server to show. Code and Reason are
// the answer's; the audit outcome record carries the same code.
type Outcome struct {
	Tool string
	// Step is the step the flow ended at.
	Step   Step
	Code   result.Code
	Reason string
	// Refusal is the protection rule that refused a move_file, at check
	// or recheck; nil otherwise.
	Refusal *Skip
	// Action is the journal action carried out; nil when nothing moved.
	Action *journal.Action
	// Failed are the moves that could not be made (Action set) or the
	// reasons nothing moved.
	Failed []journal.Failure
	// Stale: apply_plan's plan no longer holds as a whole; Failed says why
	// per file and nothing moved.
	Stale bool
	// UndoDepth and RedoDepth are the journal's stacks after the action.
	UndoDepth, RedoDepth int
	// Approval is who confirmed (detail.approval); nil when not reported.
	Approval *approval.Approval
	// Pending: the tool's answer is the question to the person, already
	// set on the call (a 2026-07-28 client); nothing was done yet.
	Pending bool
}

// Moved is how many objects the flow moved.
func (out Outcome) Moved() int {
	if out.Action == nil {
		return 0
	}
	return len(out.Action.Moves)
}

// Apply applies the plan q.PlanID once. When the person confirms
// apply_plan, they are asked about the plan without consuming it (a
// declined or unanswered question leaves the plan id usable); a plan that
// no longer holds is not worth their time. Then the plan id is used up and
// every move re-checked by the journal before anything moves.
func (g *Organizer) Apply(ctx context.Context, q ApplyRequest) Outcome {
	const tool = "apply_plan"
	if !g.asks(KeyApplyPlan) {
		out := g.applyNow(ctx, q.PlanID)
		out.Approval = byAgent(KeyApplyPlan)
		return out
	}
	_, end := g.begin(ctx, tool, StepPlanID)
	p, err := g.plans.Peek(q.PlanID)
	if err != nil {
		return ended(end, refused(tool, StepPlanID, planIDRefusal(err)))
	}
	end(result.OK)
	if !q.Call.Retry { // a retry answers a question already asked: it is resolved, and audited
		_, end = g.begin(ctx, tool, StepCheck)
		if failed := g.o.Journal.Check(p.moves); len(failed) > 0 {
			return ended(end, stale(failed, len(p.moves), StepCheck))
		}
		end(result.OK)
	}
	v, stop := g.ask(ctx, q.Call, Ask{Action: tool, Key: KeyApplyPlan, Title: ApplyTitle,
		IDLabel: "Plan", ID: q.PlanID, Moves: p.moves, PerFolder: true})
	if stop != nil {
		return *stop
	}
	return done(v, g.applyNow(ctx, q.PlanID))
}

// applyNow uses the plan id up and applies the plan: the journal re-checks
// every move against what was planned (and asked about), writes the intent
// and only then moves. Anything changed since planning: nothing moves and
// the plan is STALE.
func (g *Organizer) applyNow(ctx context.Context, planID string) Outcome {
	const tool = "apply_plan"
	_, end := g.begin(ctx, tool, StepPlanID)
	p, err := g.plans.Take(planID)
	if err != nil {
		return ended(end, refused(tool, StepPlanID, planIDRefusal(err)))
	}
	end(result.OK)
	var intentID string
	jctx, end := g.begin(ctx, tool, StepJournal)
	res, err := g.o.Journal.Do(tool, planID, p.moves, g.intent(jctx, tool, map[string]any{"plan_id": planID}, &intentID))
	if err != nil && res.Action == nil && len(res.Failed) > 0 {
		return g.finish(ctx, intentID, ended(end, stale(res.Failed, len(p.moves), StepJournal)))
	}
	return g.finish(ctx, intentID, ended(end, g.report(tool, res, err)))
}

// Move moves one object the person named. The protection layer is applied
// first; when the person confirms, they are asked, and the move is checked
// again after the answer and must still be the one they were asked about.
// The journal then re-checks, writes the intent and moves.
func (g *Organizer) Move(ctx context.Context, q MoveRequest) Outcome {
	const tool = "move_file"
	_, end := g.begin(ctx, tool, StepCheck)
	m, sk := g.ws.CheckMove(q.Src, q.Dest)
	if sk != nil {
		return ended(end, skipped(tool, StepCheck, sk))
	}
	end(result.OK)
	v := approval.Verdict{ByAgent: true, Approval: byAgent(KeyMoveFile)}
	if g.asks(KeyMoveFile) {
		var stop *Outcome
		if v, stop = g.ask(ctx, q.Call, Ask{Action: tool, Key: KeyMoveFile, Title: MoveTitle, Moves: []journal.Move{m}}); stop != nil {
			return *stop
		}
	}
	if v.Proceed { // the person may take minutes
		_, end = g.begin(ctx, tool, StepRecheck)
		again, sk := g.ws.CheckMove(q.Src, q.Dest)
		if sk != nil {
			return done(v, ended(end, skipped(tool, StepRecheck, sk)))
		}
		if !journal.SameMoves([]journal.Move{again}, []journal.Move{m}) {
			return done(v, ended(end, refused(tool, StepRecheck, jail.ErrChanged)))
		}
		end(result.OK)
	}
	var intentID string
	jctx, end := g.begin(ctx, tool, StepJournal)
	res, err := g.o.Journal.Do(tool, m.Src+" -> "+m.Dst, []journal.Move{m}, g.intent(jctx, tool, map[string]any{"src": m.Src, "dest": m.Dst}, &intentID))
	return done(v, g.finish(ctx, intentID, ended(end, g.report(tool, res, err))))
}

// Undo reverts the latest action (undo_last_action).
func (g *Organizer) Undo(ctx context.Context, call approval.Call) Outcome {
	return g.revert(ctx, call, "undo_last_action")
}

// Redo re-applies the latest undone action (redo_last_action).
func (g *Organizer) Redo(ctx context.Context, call approval.Call) Outcome {
	return g.revert(ctx, call, "redo_last_action")
}

// revert undoes or redoes the latest action. When the person confirms, they
// are asked about the moves it would make now, and it runs only if those
// are still exactly the moves it makes after the answer (journal.Expect,
// checked by the journal with its own checks, before the intent).
func (g *Organizer) revert(ctx context.Context, call approval.Call, tool string) Outcome {
	next, run, title := g.o.Journal.NextUndo, g.o.Journal.Undo, UndoTitle
	if tool == "redo_last_action" {
		next, run, title = g.o.Journal.NextRedo, g.o.Journal.Redo, RedoTitle
	}
	var asked []journal.Move // the moves the person accepted; nil when not asked
	v := approval.Verdict{ByAgent: true, Approval: byAgent(KeyMoveFile)}
	if g.asks(KeyMoveFile) {
		_, end := g.begin(ctx, tool, StepCheck)
		a, err := next()
		if err != nil { // nothing to undo (or redo): no intent, no record
			out := g.report(tool, journal.Outcome{}, err)
			out.Step = StepCheck
			return ended(end, out)
		}
		end(result.OK)
		var stop *Outcome
		if v, stop = g.ask(ctx, call, Ask{Action: tool, Key: KeyMoveFile, Title: title,
			IDLabel: "Action", ID: strconv.FormatUint(a.ID, 10), Moves: a.Moves}); stop != nil {
			return *stop
		}
		if v.Proceed {
			asked = a.Moves
		}
	}
	var intentID string
	jctx, end := g.begin(ctx, tool, StepJournal)
	hook := g.intentAction(jctx, tool, &intentID)
	if v.Proceed {
		hook = journal.Expect(asked, hook)
	}
	res, err := run(hook)
	return done(v, g.finish(ctx, intentID, ended(end, g.report(tool, res, err))))
}
