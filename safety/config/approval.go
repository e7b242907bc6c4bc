package config

import "time"

// Approval says who confirms what cannot be undone: the person, asked
// through the client (an MCP elicitation form that the client shows to the
// user, not to the model), or the agent, by an argument it writes.
// docs/approval.md explains who can confirm what, why the agent cannot
// answer a question meant for the person, and which clients can ask.
type Approval struct {
	// Reclaim is who confirms a sweepd reclaim that deletes (a call with
	// confirm: "delete"). "human" (default): the person is asked, and
	// nothing is deleted unless they answer "allow once", because deletion
	// is permanent. "agent": confirm: "delete" alone deletes.
	Reclaim string `toml:"reclaim" json:"reclaim"`
	// ApplyPlan is who confirms organizerd's apply_plan. "agent" (default):
	// the agent applies a plan it was shown, because every move can be
	// undone with undo_last_action. "human": the person is asked first,
	// with the moves counted per destination folder and the HIGH_RISK files
	// named.
	ApplyPlan string `toml:"apply_plan" json:"apply_plan"`
	// MoveFile is who confirms organizerd's move_file, undo_last_action and
	// redo_last_action. "agent" (default): each move can be undone. "human":
	// the person is asked about every call.
	MoveFile string `toml:"move_file" json:"move_file"`
	// Fallback is what happens when the person should confirm but the
	// client cannot ask one (it did not declare MCP elicitation). "refuse"
	// (default): NEEDS_EXPLICIT_REQUEST, nothing changes, and the reason
	// names the client feature needed and this key. "agent": the agent's
	// own confirmation applies, as if the key said "agent". It also applies
	// to terminald's ask tier ([terminal.ask], ask_args).
	Fallback string `toml:"fallback" json:"fallback"`
	// TimeoutSeconds is how long a question waits for the person's answer
	// (default 600, at most 86400). A question left unanswered is TIMEOUT
	// and changes nothing; ids and plans stay usable.
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

// ApprovalWho and ApprovalFallbacks are the values [approval]'s keys take
// (docs/policy.md and the policy schema list them).
var (
	ApprovalWho       = []string{"human", "agent"}
	ApprovalFallbacks = []string{"refuse", "agent"}
)

// ApprovalTimeoutMax bounds timeout_seconds (one day).
const ApprovalTimeoutMax = 86400

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
			return keyFatalf("approval."+kv[0], "[approval] %s must be \"human\" or \"agent\", not %q%s", kv[0], kv[1], meant(kv[1], ApprovalWho))
		}
	}
	switch a.Fallback {
	case "", "refuse", "agent":
	default:
		return keyFatalf("approval.fallback", "[approval] fallback must be \"refuse\" or \"agent\", not %q%s", a.Fallback, meant(a.Fallback, ApprovalFallbacks))
	}
	if a.TimeoutSeconds < 0 || a.TimeoutSeconds > ApprovalTimeoutMax {
		return keyFatalf("approval.timeout_seconds", "[approval] timeout_seconds must be between 1 and %d, not %d", ApprovalTimeoutMax, a.TimeoutSeconds)
	}
	return nil
}
