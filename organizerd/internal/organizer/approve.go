package organizer

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
)

// The policy keys that make organizerd ask the person.
const (
	keyApplyPlan = "approval.apply_plan"
	keyMoveFile  = "approval.move_file"
)

// byAgent is detail.approval when the agent's own call is the confirmation.
func byAgent(key string) *approval.Approval {
	return &approval.Approval{Asked: false, By: string(approval.Agent), Key: key}
}

// asksPerson reports whether the person confirms what key covers.
func (s *Server) asksPerson(key string) bool {
	if s.o.Asker == nil {
		return false
	}
	if key == keyApplyPlan {
		return s.o.ApplyPlan == approval.Human
	}
	return s.o.MoveFile == approval.Human
}

// asked is the outcome of asking before an operation.
type asked struct {
	v approval.Verdict
	// stop is the tool's answer when the operation must not run now (a
	// refusal, or a pending question); nil when it runs.
	stop *result.OperationResult
}

// confirm asks the person about a (when the policy says so) and tells the
// caller whether to act. The operation's result must pass through done.
func (s *Server) confirm(ctx context.Context, req mcp.CallToolRequest, a organize.Ask, start time.Time) asked {
	if !s.asksPerson(a.Key) {
		return asked{v: approval.Verdict{ByAgent: true, Approval: byAgent(a.Key)}}
	}
	v := s.o.Asker.Ask(ctx, req, s.ws.Question(a))
	switch {
	case v.Pending:
		return asked{v: v, stop: &result.OperationResult{}}
	case v.Proceed, v.ByAgent:
		return asked{v: v}
	}
	r := withApproval(result.Fail(a.Action, v.Err, map[string]any{"moved": 0}, start), v.Approval)
	return asked{v: v, stop: &r}
}

// done records an approved operation's outcome and adds detail.approval.
func (k asked) done(r result.OperationResult) result.OperationResult {
	if k.v.Proceed {
		k.v.Done(r.Code)
	}
	return withApproval(r, k.v.Approval)
}

// withApproval sets detail.approval of r.
func withApproval(r result.OperationResult, a *approval.Approval) result.OperationResult {
	if a == nil {
		return r
	}
	d, ok := r.Detail.(map[string]any)
	if !ok {
		return r
	}
	out := make(map[string]any, len(d)+1)
	for k, v := range d {
		out[k] = v
	}
	out["approval"] = a
	r.Detail = out
	return r
}

// answering reports whether req is a 2026-07-28 retry carrying the person's
// answer: the question it answers was asked, so it is resolved (and
// audited) even when the facts changed meanwhile.
func answering(req mcp.CallToolRequest) bool {
	return req.Params.RequestState != "" || len(req.Params.InputResponses) > 0
}
