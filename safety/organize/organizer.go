package organize

// The Organizer is organizerd's pipeline: what it is configured with, and
// the names of its steps. Its flows are in pipeline.go.

import (
	"context"
	"log/slog"
	"time"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/result"
)

// The policy keys that make organizerd ask the person.
const (
	// KeyApplyPlan ([approval] apply_plan) covers apply_plan.
	KeyApplyPlan = "approval.apply_plan"
	// KeyMoveFile ([approval] move_file) covers move_file,
	// undo_last_action and redo_last_action.
	KeyMoveFile = "approval.move_file"
)

// The fixed sentences naming each flow in the question to the person.
const (
	ApplyTitle = "Apply this organize plan? Each item moves into its folder inside the workspace; nothing is deleted or overwritten, and undo_last_action takes the whole plan back."
	MoveTitle  = "Move this item inside the workspace? Nothing is deleted or overwritten, and undo_last_action moves it back."
	UndoTitle  = "Undo the latest action? Each item below moves back to where it was; nothing is deleted or overwritten, and redo_last_action moves them again."
	RedoTitle  = "Redo the latest undone action? Each item below moves again; nothing is deleted or overwritten, and undo_last_action moves them back."
)

// Options configure an Organizer. Root, Rules, Journal and Audit are
// required.
type Options struct {
	Root  *jail.Root
	Rules *Rules
	// Radar marks HIGH_RISK files for the planner's restraint and the
	// question; nil: no radar.
	Radar *Radar
	// Journal is the write-ahead journal every move goes through.
	Journal *journal.Journal
	// Audit receives the intent before and the outcome after every flow
	// that moves.
	Audit  *audit.Log
	Logger *slog.Logger
	// PlanTTL is how long a plan id stays valid (default one hour).
	PlanTTL time.Duration
	// Asker asks the person (MCP elicitation) before the flows whose
	// who-confirms setting is approval.Human; nil: the agent's call is the
	// confirmation, as before [approval]. The server binds it to each tool
	// call (Asker.For) and passes the approval.Call in the request.
	Asker *approval.Asker
	// ApplyPlan is who confirms apply_plan ([approval] apply_plan).
	ApplyPlan approval.Who
	// MoveFile is who confirms move_file, undo_last_action and
	// redo_last_action ([approval] move_file).
	MoveFile approval.Who
	// Observer, when set, is told of each step of each flow.
	Observer Observer
}

// Organizer runs organizerd's flows. It is safe for concurrent use.
type Organizer struct {
	o     Options
	ws    Workspace
	plans *ids.Store[*plan]
}

// NewOrganizer returns an Organizer with an empty plan store.
func NewOrganizer(o Options) *Organizer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PlanTTL <= 0 {
		o.PlanTTL = time.Hour
	}
	return &Organizer{o: o, ws: Workspace{Root: o.Root, Rules: o.Rules, Radar: o.Radar},
		plans: ids.NewStore[*plan]("p", o.PlanTTL, 64)}
}

// Workspace is the rule evaluation the Organizer applies (list_files
// shows it too).
func (g *Organizer) Workspace() Workspace { return g.ws }

// Step names one step of a flow, for an Observer and in an Outcome.
type Step string

// The steps, in the order a flow takes them.
const (
	StepPlanID  Step = "plan_id" // the plan id looked up (apply_plan)
	StepCheck   Step = "check"   // the policy and protection checks
	StepAsk     Step = "ask"     // the person's answer (approval.Call)
	StepRecheck Step = "recheck" // the checks again, after the answer
	StepIntent  Step = "intent"  // the audit intent record (fail-closed)
	StepJournal Step = "journal" // the journal's checks, begin record and moves
	StepRecord  Step = "record"  // the audit outcome record
)

// Observer watches the steps of every flow: Begin is called as a step
// starts, with the flow's context, and the function it returns as the step
// ends, with the code it ended with (OK: the flow went on). It must not
// block. OpenTelemetry spans, or a view's progress, are Observers; the
// pipeline needs none.
type Observer interface {
	Begin(ctx context.Context, tool string, step Step) (context.Context, func(result.Code))
}
