package terminal

import (
	"strings"
	"testing"
)

// TestAskDecisionIsExplainedAndNotRun: under the shipped policy, a plain
// git push is an ask decision. explain_command says "ask", names the rule
// that asks and the executable, and tells the model a person will be
// asked; run_command of a server built without an Asker refuses it with
// NEEDS_EXPLICIT_REQUEST and runs nothing, because it cannot ask a person
// (approval_test.go covers a server with one).
func TestAskDecisionIsExplainedAndNotRun(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ name, line, rule string }{
		{"push", "git push origin main", `git ask_args "push"`},
		{"branch delete", "git branch -D topic", `git ask_args "branch --delete"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := e.explain(t, c.line)
			if x.Code != "OK" || x.str("decision") != "ask" || x.str("code") != "NEEDS_EXPLICIT_REQUEST" ||
				!strings.Contains(x.str("rule"), c.rule) || x.str("executable") == "" {
				t.Fatalf("explain %q: %s decision %q code %q rule %q executable %q", c.line, x.Code, x.str("decision"),
					x.str("code"), x.str("rule"), x.str("executable"))
			}
			if !strings.Contains(x.str("reason"), "a person must approve") || !strings.Contains(x.text, "only once a person approves it") {
				t.Fatalf("explain %q does not say a person will be asked: %s", c.line, x.text)
			}
			r := e.run(t, c.line)
			wantNothingRan(t, r, "NEEDS_EXPLICIT_REQUEST")
			if !strings.Contains(r.Reason, "a person must approve") || !strings.Contains(r.Reason, "no way to ask a person") {
				t.Fatalf("run %q: reason %q", c.line, r.Reason)
			}
		})
	}
}
