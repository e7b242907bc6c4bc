package config

import "time"

// Approval says who confirms what cannot be undone: the person, asked
// through the client (MCP elicitation), or the agent, by an argument it
// writes. docs/approval.md explains why the agent cannot answer a question
// meant for the person.
type Approval struct {
	// Reclaim is who confirms a sweepd reclaim that deletes: "human"
	// (default: deleting is permanent) or "agent" (confirm: "delete" alone).
	Reclaim string `toml:"reclaim" json:"reclaim"`
	// ApplyPlan is who confirms organizerd's apply_plan: "agent" (default:
	// every move is undoable, and the plan was shown first) or "human".
	ApplyPlan string `toml:"apply_plan" json:"apply_plan"`
	// MoveFile is who confirms organizerd's move_file, undo_last_action and
	// redo_last_action: "agent" (default: undoable) or "human".
	MoveFile string `toml:"move_file" json:"move_file"`
	// Fallback is what happens when a person should confirm but the client
	// cannot ask one: "refuse" (default: NEEDS_EXPLICIT_REQUEST, nothing
	// changes) or "agent" (the agent's confirmation applies, as without
	// [approval]).
	Fallback string `toml:"fallback" json:"fallback"`
	// TimeoutSeconds is how long a question waits for the person (default
	// 600, at most 86400); an unanswered question is TIMEOUT and changes
	// nothing.
	TimeoutSeconds int `toml:"timeout_seconds" json:"timeout_seconds"`
}

// Approval defaults: the person confirms deletion; undoable moves are the
// agent's to confirm.
const (
	DefaultApproveReclaim   = "human"
	DefaultApproveApplyPlan = "agent"
	DefaultApproveMoveFile  = "agent"
	DefaultApprovalFallback = "refuse"
)

// DefaultApprovalTimeout is how long a question waits by default.
const DefaultApprovalTimeout = 600 * time.Second

// Who returns who confirms each operation ("human" or "agent"), with
// defaults applied.
func (a Approval) Who() (reclaim, applyPlan, moveFile string) {
	pick := func(v, def string) string {
		if v == "" {
			v = def
		}
		return v
	}
	return pick(a.Reclaim, DefaultApproveReclaim), pick(a.ApplyPlan, DefaultApproveApplyPlan), pick(a.MoveFile, DefaultApproveMoveFile)
}

// Asking returns the fallback and the timeout, with defaults applied.
func (a Approval) Asking() (fallback string, timeout time.Duration) {
	fallback, timeout = a.Fallback, time.Duration(a.TimeoutSeconds)*time.Second
	if fallback == "" {
		fallback = DefaultApprovalFallback
	}
	if timeout == 0 {
		timeout = DefaultApprovalTimeout
	}
	return fallback, timeout
}

// validate refuses a value that is not one of the documented ones.
func (a Approval) validate() error {
	for _, kv := range [][2]string{{"reclaim", a.Reclaim}, {"apply_plan", a.ApplyPlan}, {"move_file", a.MoveFile}} {
		switch kv[1] {
		case "", "human", "agent":
		default:
			return Fatalf("[approval] %s must be \"human\" or \"agent\", not %q", kv[0], kv[1])
		}
	}
	switch a.Fallback {
	case "", "refuse", "agent":
	default:
		return Fatalf("[approval] fallback must be \"refuse\" or \"agent\", not %q", a.Fallback)
	}
	if a.TimeoutSeconds < 0 || a.TimeoutSeconds > 86400 {
		return Fatalf("[approval] timeout_seconds must be between 1 and 86400, not %d", a.TimeoutSeconds)
	}
	return nil
}
