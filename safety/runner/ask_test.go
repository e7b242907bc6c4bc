package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/result"
)

// TestAskDecisionDoesNotRun: a line the policy asks a person about is
// judged NEEDS_EXPLICIT_REQUEST by Evaluate (with its executable, for the
// question) and refused by Run with that code, nothing run, until a person
// can approve it; the reason says a person must approve it and that this
// server cannot ask yet.
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
				!strings.Contains(out.Reason, "cannot ask a person yet") || !strings.Contains(out.Reason, "asked.txt")) {
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
