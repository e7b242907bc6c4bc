// Package approval asks the person, not the agent, to confirm what cannot be
// undone, through MCP elicitation: the client shows a form to the user, and
// the model never sees or answers it.
//
// One call, Asker.Ask, serves both kinds of client:
//   - a client that negotiated a protocol before 2026-07-28 and declared the
//     elicitation capability gets an elicitation/create request, answered
//     within the policy's timeout;
//   - a 2026-07-28 client gets an "input required" result (multi round-trip)
//     whose request state is signed by this server, binds the question's
//     digest and expires after the timeout; its retry carries the answer.
//
// A client without elicitation gets the policy's fallback: a refusal naming
// the missing client feature and the policy key that would let the agent
// confirm, or the agent's own confirmation.
//
// Asking never holds a lock or a use-once id: the caller asks with a
// Question built from the live facts, and only after an accept re-checks and
// consumes what it acts on. A retry whose facts changed is STALE.
package approval

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// Who confirms an operation: the person (through the client) or the agent
// (by an argument it writes, such as reclaim's confirm: "delete").
type Who string

const (
	Human Who = "human"
	Agent Who = "agent"
)

// Fallback is what happens when a person should confirm but the client
// cannot ask one.
type Fallback string

const (
	FallbackRefuse Fallback = "refuse"
	FallbackAgent  Fallback = "agent"
)

// DefaultTimeout is how long a question waits for the person when Options
// name no timeout (config.DefaultApprovalTimeout is the policy's default).
const DefaultTimeout = 600 * time.Second

// Approval is detail.approval of a tool result: who confirmed, and how.
type Approval struct {
	Asked  bool   `json:"asked"`
	By     string `json:"by,omitempty"`     // human | agent
	Answer string `json:"answer,omitempty"` // accept | decline | cancel
	Scope  string `json:"scope,omitempty"`  // once | session
	Key    string `json:"key,omitempty"`    // what made the server ask
}

// The refusals. Their reasons say what happened and what to do next.
var (
	ErrDeclined  = result.New(result.PolicyDenied, "the person declined: nothing was changed; do not ask again unless they tell you to")
	ErrCancelled = result.New(result.PolicyDenied, "the person dismissed the question: nothing was changed; ask them in the conversation whether to try again")
	ErrTimeout   = result.New(result.Timeout, "the person did not answer in time: nothing was changed; call again to ask again")
	ErrStale     = result.New(result.Stale, "what the person was asked about changed while the question was open, or this answer was already used: nothing was changed; call again to ask about what is there now")
	ErrNoClient  = result.New(result.NeedsExplicitRequest, "")
)

// Options configure an Asker.
type Options struct {
	Fallback Fallback
	Timeout  time.Duration
	// Audit receives an intent record before each question, a decision
	// record after the answer, and the outcome (Verdict.Done).
	Audit *audit.Log
}

// Asker asks questions. It is safe for concurrent use.
type Asker struct {
	o   Options
	key [32]byte

	mu       sync.Mutex
	used     map[string]time.Time       // answered request states, until they expire
	sessions map[string]map[string]bool // session id → digests allowed for the session
}

// New returns an Asker with a fresh signing key: request states of another
// process (or an earlier run) never verify.
func New(o Options) *Asker {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Fallback == "" {
		o.Fallback = FallbackRefuse
	}
	a := &Asker{o: o, used: map[string]time.Time{}, sessions: map[string]map[string]bool{}}
	if _, err := rand.Read(a.key[:]); err != nil {
		panic("approval: no randomness for the signing key: " + err.Error())
	}
	return a
}

// Timeout is how long a question waits.
func (a *Asker) Timeout() time.Duration { return a.o.Timeout }

// Verdict is the answer to Ask.
type Verdict struct {
	// Proceed: the person accepted (or approved this argv for the session);
	// the caller re-checks its facts and acts, then calls Done.
	Proceed bool
	// ByAgent: the client cannot ask and the fallback is "agent": the
	// caller applies the agent's own confirmation, as before approval.
	ByAgent bool
	// Pending: the tool's answer is the input request already set with
	// mcpkit (a 2026-07-28 client); return any result, it is not sent.
	Pending bool
	// Err is the refusal when none of the above holds.
	Err error
	// Approval is detail.approval.
	Approval *Approval

	a      *Asker
	intent string
	action string
}

// Done records the outcome of an approved operation (its final code).
func (v Verdict) Done(code result.Code) {
	if v.a != nil && v.intent != "" && v.a.o.Audit != nil {
		_ = v.a.o.Audit.Outcome(v.intent, "approval", code, map[string]any{"tool": v.action})
	}
}

// Ask asks the person q, unless this session already allowed the same
// binding. See the package doc for the two kinds of client.
func (a *Asker) Ask(ctx context.Context, req mcp.CallToolRequest, q Question) (v Verdict) {
	ctx, span := telemetry.Start(ctx, "approval.ask", telemetry.String("gen_ai.tool.name", q.Action))
	defer func() { span.Set(telemetry.String("bastion.answer", v.answer())); span.End() }()
	sid := sessionID(ctx)
	if sid == "" {
		q.Session = false // a stateless client has no session to remember an approval for
	}
	digest := q.Digest()
	if q.Session && a.sessionAllows(sid, digest) {
		return Verdict{Proceed: true, Approval: &Approval{Asked: false, By: string(Human), Answer: "accept", Scope: "session", Key: q.Key}}
	}
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		return a.resume(ctx, req, q, digest, sid)
	}
	if !canElicit(ctx) {
		return a.fallback(q)
	}
	intent, err := a.intent(q, digest)
	if err != nil {
		return Verdict{Err: err}
	}
	if server.IsModernRequest(ctx) {
		return a.pending(ctx, q, digest, intent)
	}
	return a.askNow(ctx, q, digest, sid, intent)
}

// fallback answers for a client that cannot ask a person.
func (a *Asker) fallback(q Question) Verdict {
	if a.o.Fallback == FallbackAgent {
		return Verdict{ByAgent: true, Approval: &Approval{Asked: false, By: string(Agent), Key: q.Key}}
	}
	return Verdict{Err: ErrNoClient.With("a person must confirm "+q.Action+" ("+q.Key+"), and this client cannot ask one: "+
		"it does not offer MCP elicitation (form mode). Use a client that does, or let the agent confirm by setting "+
		"[approval] fallback = \"agent\""+agentKeyHint(q.Key)+" in the policy file; nothing was changed", nil)}
}

// agentKeyHint names the per-operation key when the question came from one.
func agentKeyHint(key string) string {
	if len(key) > len("approval.") && key[:len("approval.")] == "approval." {
		return " (or " + key[len("approval."):] + " = \"agent\" under [approval])"
	}
	return ""
}

// intent writes the record that precedes a question.
func (a *Asker) intent(q Question, digest string) (string, error) {
	if a.o.Audit == nil {
		return "", nil
	}
	return a.o.Audit.Intent("approval", map[string]any{"tool": q.Action, "key": q.Key, "digest": digest, "question": q.Message()})
}

// decide turns the client's answer into a verdict and records it.
func (a *Asker) decide(q Question, res *mcp.ElicitationResult, intent, sid, digest string) Verdict {
	answer, scope := "cancel", ""
	if res != nil {
		switch res.Action {
		case mcp.ElicitationResponseActionAccept:
			answer = "decline"
			content, _ := res.Content.(map[string]any)
			switch content["answer"] {
			case AnswerOnce:
				answer, scope = "accept", "once"
			case AnswerSession:
				if q.Session {
					answer, scope = "accept", "session"
				}
			}
		case mcp.ElicitationResponseActionDecline:
			answer = "decline"
		}
	}
	if a.o.Audit != nil {
		_ = a.o.Audit.Event("approval.decision", map[string]any{"intent": intent, "tool": q.Action, "answer": answer, "scope": scope, "by": string(Human)})
	}
	v := Verdict{a: a, intent: intent, action: q.Action, Approval: &Approval{Asked: true, By: string(Human), Answer: answer, Scope: scope, Key: q.Key}}
	switch answer {
	case "accept":
		if scope == "session" {
			a.allowSession(sid, digest)
		}
		v.Proceed = true
	case "decline":
		v.Err = ErrDeclined
		v.Done(result.PolicyDenied)
	default:
		v.Err = ErrCancelled
		v.Done(result.PolicyDenied)
	}
	return v
}

// askNow sends elicitation/create and waits up to the timeout.
func (a *Asker) askNow(ctx context.Context, q Question, digest, sid, intent string) Verdict {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return a.fallback(q)
	}
	tctx, cancel := context.WithTimeout(ctx, a.o.Timeout)
	defer cancel()
	res, err := srv.RequestElicitation(tctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  mcp.ElicitationParams{Message: q.Message(), RequestedSchema: q.Schema()},
	})
	if err != nil {
		v := Verdict{a: a, intent: intent, action: q.Action}
		switch {
		case ctx.Err() != nil:
			v.Err = result.Wrap(result.OperationFailed, "the call was cancelled while the person was being asked; nothing was changed", ctx.Err())
		case tctx.Err() != nil:
			v.Err = ErrTimeout
		default:
			v.Err = result.Wrap(result.OperationFailed, "the client failed to ask the person; nothing was changed", err)
		}
		if a.o.Audit != nil {
			_ = a.o.Audit.Event("approval.decision", map[string]any{"intent": intent, "tool": q.Action, "answer": "none", "code": string(result.CodeOf(v.Err))})
		}
		v.Done(result.CodeOf(v.Err))
		return v
	}
	return a.decide(q, res, intent, sid, digest)
}

// sessionID is the client session's id, or "" for a stateless request.
func sessionID(ctx context.Context) string {
	if server.IsModernRequest(ctx) {
		return ""
	}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}

// canElicit reports whether the client declared form elicitation for this
// request (2026-07-28) or this session (earlier versions).
func canElicit(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	_, elicits := server.ClientSessionFromContext(ctx).(server.SessionWithElicitation)
	return elicits && s.GetClientCapabilities().Elicitation != nil
}

func (a *Asker) sessionAllows(sid, digest string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[sid][digest]
}

func (a *Asker) allowSession(sid, digest string) {
	if sid == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions[sid] == nil {
		a.sessions[sid] = map[string]bool{}
	}
	a.sessions[sid][digest] = true
}

// AskFunc asks the person q through one tool call; Call binds it. Safety
// packages that must not speak the protocol (reclaim, runner) take one.
type AskFunc func(ctx context.Context, q Question) Verdict

// Call is one tool call's way to ask the person.
type Call struct {
	// Ask is nil when no Asker is configured: the agent confirms.
	Ask AskFunc
	// Retry: the call is a 2026-07-28 client's retry carrying an answer.
	Retry bool
}

// For binds the Asker to one tool call. A nil Asker gives a Call whose Ask
// is nil.
func (a *Asker) For(req mcp.CallToolRequest) Call {
	c := Call{Retry: req.Params.RequestState != "" || len(req.Params.InputResponses) > 0}
	if a != nil {
		c.Ask = func(ctx context.Context, q Question) Verdict { return a.Ask(ctx, req, q) }
	}
	return c
}

// answer is the verdict in one word, for telemetry.
func (v Verdict) answer() string {
	switch {
	case v.Approval != nil && v.Approval.Answer != "":
		return v.Approval.Answer
	case v.Pending:
		return "pending"
	case v.ByAgent:
		return "agent"
	case v.Err != nil:
		return string(result.CodeOf(v.Err))
	}
	return "none"
}
