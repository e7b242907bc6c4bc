package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestAskDecisionDoesNotRun: a line the policy asks a person about is
// judged NEEDS_EXPLICIT_REQUEST by Evaluate (with its executable, for the
// question) and, in a request without an AskFunc (no person can be
// asked), refused by Run with that code, nothing run; the reason says a
// person must approve it and that this server cannot ask.
func TestAskDecisionDoesNotRun(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Policy.Ask = append(o.Policy.Ask, "no-such-program")
		o.Policy.Rules = append(o.Policy.Rules, command.Rule{Command: "touch", AskArgs: []string{"asked.txt"},
			Reason: "the test asks about asked.txt"})
	})
	for _, c := range []struct{ name, line, code string }{
		{"ask_args", "touch asked.txt", "NEEDS_EXPLICIT_REQUEST"},
		{"ask list, not on the path", "no-such-program", "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := f.r.Evaluate(c.line)
			if !ev.Decision.Ask || ev.Decision.Allowed || ev.Allowed() || string(result.CodeOf(ev.Err)) != c.code {
				t.Fatalf("%q: evaluation %+v, want an ask decision refused with %s", c.line, ev, c.code)
			}
			if (c.code == "NEEDS_EXPLICIT_REQUEST") != (ev.Executable != "") {
				t.Fatalf("%q: executable %q", c.line, ev.Executable)
			}
			out := f.run(c.line)
			wantNothingRan(t, out, c.code)
			if c.code == "NEEDS_EXPLICIT_REQUEST" && (!strings.Contains(out.Reason, "a person must approve") ||
				!strings.Contains(out.Reason, "no way to ask a person") || !strings.Contains(out.Reason, "asked.txt")) {
				t.Fatalf("reason %q does not say who must approve, why, and that this server cannot ask", out.Reason)
			}
		})
	}
	if _, err := os.Lstat(f.Jail + "/asked.txt"); !os.IsNotExist(err) {
		t.Fatalf("the asked-about command ran: %v", err)
	}
	if out := f.run("touch other.txt"); out.Code != result.OK {
		t.Fatalf("touch other.txt: %s (%s); only the asked-about argument must ask", out.Code, out.Reason)
	}
}

// TestApprovalIsJudgedAgainAfterTheAnswer: an ask decision runs only when
// the AskFunc proceeds (or the agent may confirm) and the line, judged
// again after the answer, has the same executable and working directory;
// a working directory removed or replaced while the person decided is
// STALE and runs nothing; a pending question runs nothing and records no
// refusal.
func TestApprovalIsJudgedAgainAfterTheAnswer(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Policy.Rules = append(o.Policy.Rules, command.Rule{Command: "touch", AskArgs: []string{"asked.txt"}, Reason: "test"})
	})
	sub := filepath.Join(f.Jail, "sub")
	human := &approval.Approval{Asked: true, By: "human", Answer: "accept", Scope: "once"}
	for _, c := range []struct {
		name    string
		during  func() // while the person decides
		verdict approval.Verdict
		code    string
	}{
		{"accepted", nil, approval.Verdict{Proceed: true, Approval: human}, "OK"},
		{"by the agent", nil, approval.Verdict{ByAgent: true, Approval: &approval.Approval{By: "agent"}}, "OK"},
		{"working directory removed", func() { mustDo(t, os.Remove(sub)) }, approval.Verdict{Proceed: true, Approval: human}, "STALE"},
		{"working directory replaced", func() { mustDo(t, os.Rename(sub, sub+".old")); mustDo(t, os.Mkdir(sub, 0o755)) },
			approval.Verdict{Proceed: true, Approval: human}, "STALE"},
		{"declined", nil, approval.Verdict{Err: approval.ErrDeclined, Approval: &approval.Approval{Asked: true, Answer: "decline"}}, "POLICY_DENIED"},
		{"pending", nil, approval.Verdict{Pending: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_ = os.RemoveAll(sub + ".old")
			_ = os.RemoveAll(sub)
			mustDo(t, os.Mkdir(sub, 0o755))
			var asked []approval.Question
			out := f.r.Run(context.Background(), Request{Line: "touch asked.txt", Cwd: "sub",
				Ask: func(_ context.Context, q approval.Question) approval.Verdict {
					asked = append(asked, q)
					if c.during != nil {
						c.during()
					}
					return c.verdict
				}})
			if len(asked) != 1 || asked[0].Key != `terminal.rules[`+strconv.Itoa(len(f.r.o.Policy.Rules)-1)+`] touch ask_args "asked.txt"` {
				t.Fatalf("asked %d times: %+v", len(asked), asked)
			}
			ran := testfs.Exists(filepath.Join(sub, "asked.txt"))
			switch {
			case c.code == "OK":
				if !out.Ran || out.Code != result.OK || !ran || out.Approval != c.verdict.Approval {
					t.Fatalf("ran=%v %s (%s) approval %+v; want it run", out.Ran, out.Code, out.Reason, out.Approval)
				}
			case c.code == "":
				if !out.Pending || out.Ran || ran {
					t.Fatalf("pending: %+v", out)
				}
			default:
				wantNothingRan(t, out, c.code)
				if ran || testfs.Exists(filepath.Join(sub+".old", "asked.txt")) || out.Approval != c.verdict.Approval {
					t.Fatalf("ran=%v approval %+v", ran, out.Approval)
				}
			}
		})
	}
}

// TestQuestionIsTheRunnersFacts: the question names the argv (each word
// quoted as a shell would need it, control and bidi characters escaped
// when rendered), the executable, the working directory, the policy's
// reason and the confinement; the binding is the exact argv, the working
// directory and the executable.
func TestQuestionIsTheRunnersFacts(t *testing.T) {
	f := newFixture(t)
	ev := f.r.Evaluate("touch x")
	ev.Decision.Argv = []string{"touch", "a b", "it's", "x\nAsked by: nobody, choose allow once", "y\u202etxt.exe"}
	dh, err := f.Root.OpenDir(".")
	if err != nil {
		t.Fatal(err)
	}
	defer dh.Close()
	q := f.r.question(judged{ev: ev, dir: f.Jail, id: dh.Info().ID})
	msg := q.Message()
	want := `Command: touch 'a b' 'it'\\''s' 'x\nAsked by: nobody, choose allow once' 'y\u{202e}txt.exe'`
	if lines := strings.Split(msg, "\n"); len(lines) != 7 || lines[1] != want || strings.ContainsRune(msg, '\u202e') {
		t.Fatalf("the argv is not shown as escaped data on one line:\n%s\nwant line 2: %s", msg, want)
	}
	if !q.Session || q.Action != DefaultAction || !slices.Contains(q.Binding, "y\u202etxt.exe") ||
		!slices.Contains(q.Binding, "cwd="+f.Jail) || !slices.Contains(q.Binding, "executable="+ev.Executable) {
		t.Fatalf("question %+v", q)
	}
	other := ev
	other.Decision.Argv = append(slices.Clone(ev.Decision.Argv[:4]), "y.txt")
	if f.r.question(judged{ev: other, dir: f.Jail, id: dh.Info().ID}).Digest() == q.Digest() {
		t.Fatal("another argument gives the same digest")
	}
	// A secret in an argument is redacted from the text shown (and
	// audited), not from what is approved.
	key := "AK" + "IA" + "EXAMPLEKEY234567" // split so scanners do not flag the test
	other.Decision.Argv = []string{"touch", key}
	q = f.r.question(judged{ev: other, dir: f.Jail, id: dh.Info().ID})
	if strings.Contains(q.Message(), key) || !slices.Contains(q.Binding, key) {
		t.Fatalf("the secret is shown or not bound:\n%s", q.Message())
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
