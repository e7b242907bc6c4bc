package terminal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/approval/approvaltest"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// askTouch is the test policy's ask list: every run of touch asks the
// person, and each run creates the marker file it names, so a test sees
// exactly what ran.
func askTouch(fallback approval.Fallback, timeout time.Duration) envOpt {
	return func(o *Options) {
		var allow []string
		for _, n := range o.Policy.Allow {
			if n != "touch" {
				allow = append(allow, n)
			}
		}
		o.Policy.Allow, o.Policy.Ask = allow, append(o.Policy.Ask, "touch")
		o.Asker = approval.New(approval.Options{Fallback: fallback, Timeout: timeout, Audit: o.Audit})
	}
}

// connect starts another in-process client of e's server speaking er's
// protocol, declaring elicitation when p is not nil (p answers).
func (e *env) connect(t *testing.T, er approvaltest.Era, p *approvaltest.Person) *client.Client {
	t.Helper()
	return approvaltest.Connect(t, e.srv.MCP(), er, p)
}

// runBy runs line in cwd through client c.
func runBy(t *testing.T, c *client.Client, line, cwd string) res {
	t.Helper()
	args := map[string]any{"command": line}
	if cwd != "" {
		args["cwd"] = cwd
	}
	r := mcpkittest.Call(t, c, "run_command", args)
	out := res{OK: r.OK, Code: r.Code, Reason: r.Reason, isErr: r.IsError, text: r.Text}
	r.DecodeDetail(t, &out.Detail)
	return out
}

// approvalOf is detail.approval, decoded.
func approvalOf(t *testing.T, r res) *approval.Approval {
	t.Helper()
	raw, ok := r.Detail["approval"]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	var a approval.Approval
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func wantApproval(t *testing.T, r res, want approval.Approval) {
	t.Helper()
	if got := approvalOf(t, r); got == nil || *got != want {
		t.Fatalf("detail.approval %+v, want %+v (%s %s)", got, want, r.Code, r.Reason)
	}
}

// TestAskedCommandRunsOnlyWhenThePersonAllows: every answer in both approvaltest.Eras.
// Allow once runs the command once; deny, an answer not offered, decline
// and cancel run nothing (the marker file the command would create is
// absent) and say so in detail.approval.
func TestAskedCommandRunsOnlyWhenThePersonAllows(t *testing.T) {
	key := "terminal.ask"
	cases := []struct {
		name   string
		action mcp.ElicitationResponseAction
		answer string
		code   string
		want   approval.Approval
	}{
		{"allow once", mcp.ElicitationResponseActionAccept, approval.AnswerOnce, "OK",
			approval.Approval{Asked: true, By: "human", Answer: "accept", Scope: "once", Key: key}},
		{"deny", mcp.ElicitationResponseActionAccept, approval.AnswerDeny, "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "decline", Key: key}},
		{"an answer not offered", mcp.ElicitationResponseActionAccept, "yes", "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "decline", Key: key}},
		{"decline", mcp.ElicitationResponseActionDecline, "", "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "decline", Key: key}},
		{"cancel", mcp.ElicitationResponseActionCancel, "", "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "cancel", Key: key}},
	}
	for _, er := range approvaltest.Eras {
		for _, tc := range cases {
			t.Run(er.Name+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
				p := &approvaltest.Person{Action: tc.action, Answer: tc.answer}
				r := runBy(t, e.connect(t, er, p), "touch made.txt", "")
				if r.Code != tc.code || p.Asked() != 1 {
					t.Fatalf("%s (%s), asked %d times; want %s, asked once", r.Code, r.Reason, p.Asked(), tc.code)
				}
				wantApproval(t, r, tc.want)
				if ran := testfs.Exists(filepath.Join(e.Jail, "made.txt")); ran != (tc.code == "OK") {
					t.Fatalf("the command ran: %v, want %v", ran, tc.code == "OK")
				}
				if tc.code == "OK" && (r.exit() != 0 || r.str("confinement") == "") {
					t.Fatalf("ran without its run detail: %v", r.Detail)
				}
			})
		}
	}
}

// TestAllowOnceAsksAgain: "allow once" covers one run; the same command
// asks again.
func TestAllowOnceAsksAgain(t *testing.T) {
	for _, er := range approvaltest.Eras {
		t.Run(er.Name, func(t *testing.T) {
			e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
			p := approvaltest.Accepts(approval.AnswerOnce)
			c := e.connect(t, er, p)
			for i := range 2 {
				if r := runBy(t, c, "touch made.txt", ""); r.Code != "OK" {
					t.Fatalf("run %d: %s %s", i, r.Code, r.Reason)
				}
			}
			if p.Asked() != 2 {
				t.Fatalf("asked %d times, want twice", p.Asked())
			}
		})
	}
}

// TestSessionApprovalCoversOnlyTheExactCommand: "allow this exact command
// for the rest of this session" covers the same argv in the same working
// directory of the same session and nothing else. Only the classic era
// has a session to remember it in.
func TestSessionApprovalCoversOnlyTheExactCommand(t *testing.T) {
	e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
	if err := os.Mkdir(filepath.Join(e.Jail, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := approvaltest.Accepts(approval.AnswerSession)
	c := e.connect(t, approvaltest.Classic, p)
	steps := []struct {
		name, line, cwd string
		asked           int
		scope           string
		asks            bool
	}{
		{"first run asks", "touch a.txt", "", 1, "session", true},
		{"same argv and cwd is not asked again", "touch a.txt", "", 1, "session", false},
		{"another argument asks again", "touch b.txt", "", 2, "session", true},
		{"another extra argument asks again", "touch a.txt c.txt", "", 3, "session", true},
		{"another working directory asks again", "touch a.txt", "sub", 4, "session", true},
	}
	for _, s := range steps {
		r := runBy(t, c, s.line, s.cwd)
		if r.Code != "OK" || p.Asked() != s.asked {
			t.Fatalf("%s: %s (%s), asked %d times; want OK, %d", s.name, r.Code, r.Reason, p.Asked(), s.asked)
		}
		wantApproval(t, r, approval.Approval{Asked: s.asks, By: "human", Answer: "accept", Scope: s.scope, Key: "terminal.ask"})
	}
	// A new session does not inherit the approval.
	p2 := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
	if r := runBy(t, e.connect(t, approvaltest.Classic, p2), "touch a2.txt", ""); r.Code != "POLICY_DENIED" || p2.Asked() != 1 {
		t.Fatalf("a new session: %s, asked %d", r.Code, p2.Asked())
	}
	if r := runBy(t, e.connect(t, approvaltest.Classic, p2), "touch a.txt", ""); r.Code != "POLICY_DENIED" || p2.Asked() != 2 {
		t.Fatalf("a new session, the approved argv: %s, asked %d", r.Code, p2.Asked())
	}
}

// TestUnansweredQuestionTimesOut: nothing runs when the person does not
// answer within the timeout.
func TestUnansweredQuestionTimesOut(t *testing.T) {
	for _, er := range approvaltest.Eras {
		t.Run(er.Name, func(t *testing.T) {
			e := newEnv(t, askTouch(approval.FallbackRefuse, 300*time.Millisecond))
			p := approvaltest.Accepts(approval.AnswerOnce)
			if er.Name == "classic" {
				p.Block = true // the person never answers
			} else {
				p.Hook = func() { time.Sleep(600 * time.Millisecond) } // the answer comes too late
			}
			r := runBy(t, e.connect(t, er, p), "touch made.txt", "")
			if r.Code != "TIMEOUT" || testfs.Exists(filepath.Join(e.Jail, "made.txt")) {
				t.Fatalf("%s (%s); want TIMEOUT and nothing run", r.Code, r.Reason)
			}
		})
	}
}

// TestClientWithoutElicitation: under fallback "refuse" nothing runs and
// the reason names the client feature and the policy key; under "agent"
// the command runs, approved by the agent.
func TestClientWithoutElicitation(t *testing.T) {
	for _, er := range approvaltest.Eras {
		t.Run(er.Name+"/refuse", func(t *testing.T) {
			e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
			r := runBy(t, e.connect(t, er, nil), "touch made.txt", "")
			wantNothingRan(t, r, "NEEDS_EXPLICIT_REQUEST")
			if !strings.Contains(r.Reason, "elicitation") || !strings.Contains(r.Reason, `[approval] fallback = "agent"`) ||
				!strings.Contains(r.Reason, "terminal.ask") || testfs.Exists(filepath.Join(e.Jail, "made.txt")) {
				t.Fatalf("reason %q does not name elicitation, the policy key and the rule, or the command ran", r.Reason)
			}
		})
		t.Run(er.Name+"/agent", func(t *testing.T) {
			e := newEnv(t, askTouch(approval.FallbackAgent, time.Minute))
			r := runBy(t, e.connect(t, er, nil), "touch made.txt", "")
			if r.Code != "OK" || !testfs.Exists(filepath.Join(e.Jail, "made.txt")) {
				t.Fatalf("%s (%s); want the command run", r.Code, r.Reason)
			}
			wantApproval(t, r, approval.Approval{Asked: false, By: "agent", Key: "terminal.ask"})
		})
	}
}

// TestQuestionShowsServerFactsAndEscapesArguments: the question names the
// argv (each word quoted, an argument that tries to look like an answer or
// another line shown as data), the executable, the working directory, the
// rule and the confinement; its form offers exactly the three answers.
// A line with a raw newline or a bidi override never reaches a question:
// the parser refuses it first.
func TestQuestionShowsServerFactsAndEscapesArguments(t *testing.T) {
	e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
	p := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
	c := e.connect(t, approvaltest.Classic, p)
	hostile := `touch 'made.txt\nAsked by: nobody. Choose "allow once"' ok.txt`
	if r := runBy(t, c, hostile, ""); r.Code != "POLICY_DENIED" {
		t.Fatalf("%s (%s)", r.Code, r.Reason)
	}
	msg := p.Messages()[0]
	lines := strings.Split(msg, "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "Run this command in the jail?") ||
		lines[1] != `Command: touch 'made.txt\\nAsked by: nobody. Choose "allow once"' ok.txt` ||
		!strings.HasPrefix(lines[2], "Program: /") || lines[3] != "Working directory: "+e.Jail ||
		!strings.HasPrefix(lines[4], "Policy: a person must approve") || lines[5] != "Confinement: "+e.srv.Confinement() ||
		!strings.HasPrefix(lines[6], "Asked by: terminal.ask ") {
		t.Fatalf("the question is not the server's facts, one per line:\n%s", msg)
	}
	schema, _ := json.Marshal(p.Schemas()[0])
	if !strings.Contains(string(schema), `"enum":["allow once","allow this exact command for the rest of this session","deny"]`) {
		t.Fatalf("the form is not one enum of the three answers: %s", schema)
	}
	for _, line := range []string{"touch 'a\nAnswer: allow once'", "touch 'a\u202etxt.exe'"} {
		if r := runBy(t, c, line, ""); r.Code == "OK" || p.Asked() != 1 {
			t.Fatalf("%q: %s, asked %d times; want a refusal before any question", line, r.Code, p.Asked())
		}
	}
	if ents, _ := os.ReadDir(e.Jail); len(ents) != 0 {
		t.Fatalf("something ran: %v", ents)
	}
}

// TestWorkingDirectoryChangedWhileAskingIsStale: the person accepts, but
// the working directory was replaced or removed while the question was
// open: STALE, nothing runs (classic: the runner's check after the
// answer; 2026-07-28: the retry's question is about another directory, or
// there is none).
func TestWorkingDirectoryChangedWhileAskingIsStale(t *testing.T) {
	for _, er := range approvaltest.Eras {
		for _, c := range []struct {
			name   string
			change func(sub string) error
		}{
			{"replaced", func(sub string) error {
				if err := os.Rename(sub, sub+".old"); err != nil {
					return err
				}
				return os.Mkdir(sub, 0o755)
			}},
			{"removed", func(sub string) error { return os.Rename(sub, sub+".old") }},
		} {
			t.Run(er.Name+"/"+c.name, func(t *testing.T) {
				e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
				sub := filepath.Join(e.Jail, "sub")
				if err := os.Mkdir(sub, 0o755); err != nil {
					t.Fatal(err)
				}
				p := approvaltest.Accepts(approval.AnswerOnce)
				p.Hook = func() {
					if err := c.change(sub); err != nil {
						t.Error(err)
					}
				}
				r := runBy(t, e.connect(t, er, p), "touch made.txt", "sub")
				if r.Code != "STALE" || !strings.Contains(r.Reason, "nothing was") ||
					testfs.Exists(filepath.Join(sub, "made.txt")) || testfs.Exists(filepath.Join(sub+".old", "made.txt")) {
					t.Fatalf("%s (%s); want STALE and nothing run", r.Code, r.Reason)
				}
			})
		}
	}
}

// TestApprovedRunIsAudited: the question's intent, decision and outcome
// records surround the run's own intent and outcome records.
func TestApprovedRunIsAudited(t *testing.T) {
	e := newEnv(t, askTouch(approval.FallbackRefuse, time.Minute))
	if r := runBy(t, e.connect(t, approvaltest.Classic, approvaltest.Accepts(approval.AnswerOnce)), "touch made.txt", ""); r.Code != "OK" {
		t.Fatalf("%s (%s)", r.Code, r.Reason)
	}
	var kinds []string
	for _, rec := range e.AuditRecords(t) {
		if k, _ := rec["kind"].(string); k != "event" || rec["action"] == "approval.decision" {
			kinds = append(kinds, k+":"+rec["action"].(string))
		}
	}
	want := "intent:approval,event:approval.decision,intent:run_command,outcome:run_command,outcome:approval"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("audit records %v, want %s", kinds, want)
	}
}
