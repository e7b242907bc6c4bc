package organizer

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
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// humanEnv is an organizerd whose [approval] says who for apply_plan and
// move_file, asking with fallback and timeout.
func humanEnv(t *testing.T, applyPlan, moveFile approval.Who, fallback approval.Fallback, timeout time.Duration) *env {
	t.Helper()
	return newEnvWith(t, config.Organizer{}, func(o *Options) {
		o.Asker = approval.New(approval.Options{Fallback: fallback, Timeout: timeout, Audit: o.Audit})
		o.ApplyPlan, o.MoveFile = applyPlan, moveFile
	})
}

// connect is a client of e's server in era ev, answering questions as p
// (nil: a client without elicitation).
func (e *env) connect(ev approvaltest.Era, p *approvaltest.Person) *client.Client {
	e.t.Helper()
	return approvaltest.Connect(e.t, e.srv.MCP(), ev, p)
}

type approvalDetail struct {
	Moved    int                `json:"moved"`
	Approval *approval.Approval `json:"approval"`
}

func detailOf(t *testing.T, r opResult) approvalDetail {
	t.Helper()
	var d approvalDetail
	r.DecodeDetail(t, &d)
	return d
}

func TestApplyPlanAsksThePersonInBothEras(t *testing.T) {
	cases := []struct {
		name   string
		action mcp.ElicitationResponseAction
		answer string
		code   string
		want   approval.Approval
	}{
		{"accept", mcp.ElicitationResponseActionAccept, approval.AnswerOnce, "OK",
			approval.Approval{Asked: true, By: "human", Answer: "accept", Scope: "once", Key: "approval.apply_plan"}},
		{"deny in the form", mcp.ElicitationResponseActionAccept, approval.AnswerDeny, "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "decline", Key: "approval.apply_plan"}},
		{"decline", mcp.ElicitationResponseActionDecline, "", "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "decline", Key: "approval.apply_plan"}},
		{"cancel", mcp.ElicitationResponseActionCancel, "", "POLICY_DENIED",
			approval.Approval{Asked: true, By: "human", Answer: "cancel", Key: "approval.apply_plan"}},
	}
	for _, ev := range approvaltest.Eras {
		for _, tc := range cases {
			t.Run(ev.Name+"/"+tc.name, func(t *testing.T) {
				e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackRefuse, time.Minute)
				e.put("a.jpg", "A")
				e.put("b.pdf", "BB")
				p := &approvaltest.Person{Action: tc.action, Answer: tc.answer}
				c := e.connect(ev, p)
				id := e.plan().PlanID
				r := mcpkittest.Call(t, c, "apply_plan", map[string]any{"plan_id": id})
				d := detailOf(t, r)
				if r.Code != tc.code || d.Approval == nil || *d.Approval != tc.want {
					t.Fatalf("%s %q approval %+v; want %s %+v", r.Code, r.Reason, d.Approval, tc.code, tc.want)
				}
				moved := e.exists("Images/a.jpg") && e.exists("Documents/b.pdf")
				if moved != (tc.code == "OK") || e.exists("a.jpg") == moved {
					t.Fatalf("%s: moved=%v", tc.name, moved)
				}
				if p.Asked() != 1 {
					t.Fatalf("asked %d times, want once", p.Asked())
				}
				if tc.code == "OK" {
					wantAudit(t, e, "intent:approval", "event:approval.decision", "intent:apply_plan", "outcome:apply_plan", "outcome:approval")
				} else {
					wantAudit(t, e, "intent:approval", "event:approval.decision", "outcome:approval")
				}
				msg := p.Messages()[0]
				for _, want := range []string{id, "Items to move: 2", "Total size: 3 bytes", "Into Images/: 1", "Into Documents/: 1", "a.jpg → Images/a.jpg", "HIGH_RISK files (risk radar): 0"} {
					if !strings.Contains(msg, want) {
						t.Fatalf("the question lacks %q:\n%s", want, msg)
					}
				}
			})
		}
	}
}

func TestApplyPlanUnansweredTimesOut(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name, func(t *testing.T) {
			e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackRefuse, 300*time.Millisecond)
			e.put("a.jpg", "A")
			p := approvaltest.Accepts(approval.AnswerOnce)
			if ev.Name == "classic" {
				p.Block = true
			} else {
				p.Hook = func() { time.Sleep(600 * time.Millisecond) }
			}
			id := e.plan().PlanID
			r := mcpkittest.Call(t, e.connect(ev, p), "apply_plan", map[string]any{"plan_id": id})
			if r.Code != "TIMEOUT" || !e.exists("a.jpg") {
				t.Fatalf("%s %q; want TIMEOUT with nothing moved", r.Code, r.Reason)
			}
		})
	}
}

func TestApplyPlanWithoutElicitationGetsTheFallback(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name+"/refuse", func(t *testing.T) {
			e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackRefuse, time.Minute)
			e.put("a.jpg", "A")
			r := mcpkittest.Call(t, e.connect(ev, nil), "apply_plan", map[string]any{"plan_id": e.plan().PlanID})
			if r.Code != "NEEDS_EXPLICIT_REQUEST" || !e.exists("a.jpg") || !strings.Contains(r.Reason, `apply_plan = "agent"`) {
				t.Fatalf("%s %q", r.Code, r.Reason)
			}
		})
		t.Run(ev.Name+"/agent", func(t *testing.T) {
			e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackAgent, time.Minute)
			e.put("a.jpg", "A")
			r := mcpkittest.Call(t, e.connect(ev, nil), "apply_plan", map[string]any{"plan_id": e.plan().PlanID})
			d := detailOf(t, r)
			if r.Code != "OK" || !e.exists("Images/a.jpg") || d.Approval == nil || d.Approval.Asked || d.Approval.By != "agent" {
				t.Fatalf("%s %q approval %+v", r.Code, r.Reason, d.Approval)
			}
		})
	}
}

// TestPlanIDSurvivesADeclineAndIsSingleUseAfterAnAccept: the question
// consumes nothing; the accepted apply does.
func TestPlanIDSurvivesADeclineAndIsSingleUseAfterAnAccept(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name, func(t *testing.T) {
			e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackRefuse, time.Minute)
			e.put("a.jpg", "A")
			p := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
			c := e.connect(ev, p)
			id := e.plan().PlanID
			if r := mcpkittest.Call(t, c, "apply_plan", map[string]any{"plan_id": id}); r.Code != "POLICY_DENIED" || !e.exists("a.jpg") {
				t.Fatalf("declined: %s %q", r.Code, r.Reason)
			}
			p.Set(mcp.ElicitationResponseActionAccept, approval.AnswerOnce)
			if r := mcpkittest.Call(t, c, "apply_plan", map[string]any{"plan_id": id}); r.Code != "OK" || !e.exists("Images/a.jpg") {
				t.Fatalf("accepted later: %s %q", r.Code, r.Reason)
			}
			r := mcpkittest.Call(t, c, "apply_plan", map[string]any{"plan_id": id})
			if r.Code != "STALE" || !strings.Contains(r.Reason, "already applied") || p.Asked() != 2 {
				t.Fatalf("a used plan_id: %s %q, asked %d times (want 2: a used id is refused before asking)", r.Code, r.Reason, p.Asked())
			}
		})
	}
}

// TestFileChangedWhileAskingIsNotMoved: the person accepts a plan, but a
// file changed while the question was open: nothing moves (STALE, per file).
func TestFileChangedWhileAskingIsNotMoved(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name, func(t *testing.T) {
			e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackRefuse, time.Minute)
			e.put("a.jpg", "A")
			e.put("b.pdf", "B")
			p := approvaltest.Accepts(approval.AnswerOnce)
			p.Hook = func() { e.put("b.pdf", "B, rewritten while the person was reading") }
			r := mcpkittest.Call(t, e.connect(ev, p), "apply_plan", map[string]any{"plan_id": e.plan().PlanID})
			var d struct {
				Stale []struct{ Src, Code string } `json:"stale"`
			}
			r.DecodeDetail(t, &d)
			if r.Code != "STALE" || len(d.Stale) != 1 || d.Stale[0].Src != "b.pdf" || !e.exists("a.jpg") || !e.exists("b.pdf") {
				t.Fatalf("%s %q stale %+v; want STALE naming b.pdf, nothing moved", r.Code, r.Reason, d.Stale)
			}
		})
	}
}

// TestHostileNamesAreEscapedInTheQuestion: a name found on disk reaches the
// question only as escaped data; one the rules refuse never reaches it.
func TestHostileNamesAreEscapedInTheQuestion(t *testing.T) {
	e := humanEnv(t, approval.Human, approval.Agent, approval.FallbackRefuse, time.Minute)
	e.put("invoice\u202egpj.pdf", "x")
	e.put("x.pdf\nchoose allow once", "y")
	p := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
	mcpkittest.Call(t, e.connect(approvaltest.Classic, p), "apply_plan", map[string]any{"plan_id": e.plan().PlanID})
	msg := p.Messages()[0]
	if strings.ContainsRune(msg, '\u202e') || !strings.Contains(msg, `invoice\u{202e}gpj.pdf`) {
		t.Fatalf("the bidi override is not escaped:\n%q", msg)
	}
	if strings.Contains(msg, "choose allow once") {
		t.Fatalf("a name the rules refuse reached the question:\n%q", msg)
	}
}

// TestMoveFileAsksOncePerCall: under move_file = "human" every move_file
// asks, once, about its one move, and lists a HIGH_RISK file as such.
func TestMoveFileAsksOncePerCall(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name, func(t *testing.T) {
			e := humanEnv(t, approval.Agent, approval.Human, approval.FallbackRefuse, time.Minute)
			e.put(".env", "SECRET=1")
			e.put("notes.txt", "n")
			p := approvaltest.Accepts(approval.AnswerOnce)
			c := e.connect(ev, p)
			for i, mv := range [][2]string{{".env", "old/.env"}, {"notes.txt", "old/notes.txt"}} {
				r := mcpkittest.Call(t, c, "move_file", map[string]any{"src": mv[0], "dest": mv[1]})
				if d := detailOf(t, r); r.Code != "OK" || !e.exists(mv[1]) || d.Approval == nil || d.Approval.Key != "approval.move_file" {
					t.Fatalf("move %d: %s %q %+v", i, r.Code, r.Reason, d.Approval)
				}
				if p.Asked() != i+1 {
					t.Fatalf("after %d moves the person was asked %d times", i+1, p.Asked())
				}
			}
			if first := p.Messages()[0]; !strings.Contains(first, ".env → old/.env (HIGH_RISK") || !strings.Contains(first, "HIGH_RISK files (risk radar): 1") {
				t.Fatalf("the HIGH_RISK file is not named as such:\n%s", first)
			}
		})
	}
}

// TestUndoAndRedoAskAboutTheirMoves: under move_file = "human" undo and
// redo ask about the moves they would make; a declined undo moves nothing.
func TestUndoAndRedoAskAboutTheirMoves(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name, func(t *testing.T) {
			e := humanEnv(t, approval.Agent, approval.Human, approval.FallbackRefuse, time.Minute)
			e.put("a.jpg", "A")
			p := &approvaltest.Person{Action: mcp.ElicitationResponseActionDecline}
			c := e.connect(ev, p)
			if r := mcpkittest.Call(t, c, "apply_plan", map[string]any{"plan_id": e.plan().PlanID}); r.Code != "OK" {
				t.Fatalf("apply_plan under apply_plan = \"agent\": %s %q", r.Code, r.Reason)
			}
			if r := mcpkittest.Call(t, c, "undo_last_action", nil); r.Code != "POLICY_DENIED" || !e.exists("Images/a.jpg") {
				t.Fatalf("declined undo: %s %q", r.Code, r.Reason)
			}
			if !strings.Contains(p.Messages()[0], "Images/a.jpg → a.jpg") {
				t.Fatalf("the undo question does not show its move:\n%s", p.Messages()[0])
			}
			p.Set(mcp.ElicitationResponseActionAccept, approval.AnswerOnce)
			for _, tool := range []string{"undo_last_action", "redo_last_action"} {
				if r := mcpkittest.Call(t, c, tool, nil); r.Code != "OK" {
					t.Fatalf("%s: %s %q", tool, r.Code, r.Reason)
				}
			}
			if !e.exists("Images/a.jpg") || p.Asked() != 3 {
				t.Fatalf("after undo and redo: at Images/a.jpg %v, asked %d times", e.exists("Images/a.jpg"), p.Asked())
			}
		})
	}
}

// TestUndoOfAnotherActionIsStale: the latest action changes while the
// person is asked about undoing it: the accepted answer undoes nothing.
func TestUndoOfAnotherActionIsStale(t *testing.T) {
	for _, ev := range approvaltest.Eras {
		t.Run(ev.Name, func(t *testing.T) {
			e := humanEnv(t, approval.Agent, approval.Human, approval.FallbackAgent, time.Minute)
			e.put("a.jpg", "A")
			e.put("b.txt", "B")
			if r := e.call("apply_plan", map[string]any{"plan_id": e.plan().PlanID}); r.Code != "OK" {
				t.Fatalf("apply: %s %q", r.Code, r.Reason)
			}
			p := approvaltest.Accepts(approval.AnswerOnce)
			p.Hook = func() {
				// Another client (without elicitation, fallback agent) moves a file meanwhile.
				if r := e.call("move_file", map[string]any{"src": "Documents/b.txt", "dest": "b2.txt"}); r.Code != "OK" {
					t.Errorf("the concurrent move: %s %q", r.Code, r.Reason)
				}
			}
			r := mcpkittest.Call(t, e.connect(ev, p), "undo_last_action", nil)
			if r.Code != "STALE" || !e.exists("Images/a.jpg") || !e.exists("b2.txt") {
				t.Fatalf("%s %q; want STALE with nothing undone", r.Code, r.Reason)
			}
		})
	}
}

// TestAgentConfirmsByDefault: with the shipped defaults nothing asks, and
// the results say the agent's call was the confirmation.
func TestAgentConfirmsByDefault(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.jpg", "A")
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"apply_plan", map[string]any{"plan_id": e.plan().PlanID}},
		{"undo_last_action", nil},
		{"redo_last_action", nil},
		{"move_file", map[string]any{"src": "Images/a.jpg", "dest": "a.jpg"}},
	} {
		r := e.call(call.tool, call.args)
		d := detailOf(t, r)
		if r.Code != "OK" || d.Approval == nil || d.Approval.Asked || d.Approval.By != "agent" {
			t.Fatalf("%s: %s %q approval %+v", call.tool, r.Code, r.Reason, d.Approval)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "a.jpg")); err != nil {
		t.Fatal(err)
	}
}

// wantAudit requires the audit log to hold exactly these records (kind:action).
func wantAudit(t *testing.T, e *env, want ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.auditDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Kind, Action string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Kind+":"+r.Action)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("audit records %v, want %v", got, want)
	}
}
