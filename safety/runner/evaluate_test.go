package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestEvaluateJudgesLikeRunAndTouchesNothing evaluates allowed and refused
// lines: the decision, the executable and the refusal's code are Run's,
// and nothing is recorded, prepared or written.
func TestEvaluateJudgesLikeRunAndTouchesNothing(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Policy.Allow = append(o.Policy.Allow, "no-such-program") })
	before := len(f.AuditRecords(t))
	for _, c := range []struct{ name, line, code, rule string }{
		{"allowed", "touch explained.txt", "OK", ""},
		{"denied", "rm -rf /", "POLICY_DENIED", ""},
		{"shell syntax", "echo a; touch x", "POLICY_DENIED", "parse"},
		{"not on the path", "no-such-program", "NOT_FOUND", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := f.r.Evaluate(c.line)
			if code := string(result.CodeOf(ev.Err)); code != c.code || ev.Allowed() != (c.code == "OK") {
				t.Fatalf("%q: %+v, want %s", c.line, ev, c.code)
			}
			if c.rule != "" && ev.Decision.Rule != c.rule {
				t.Fatalf("%q: rule %q, want %q", c.line, ev.Decision.Rule, c.rule)
			}
			if ev.Allowed() != filepath.IsAbs(ev.Executable) {
				t.Fatalf("%q: executable %q", c.line, ev.Executable)
			}
		})
	}
	if ents, _ := os.ReadDir(f.Jail); len(ents) != 0 {
		t.Fatalf("Evaluate changed the jail: %v", ents)
	}
	if n := len(f.AuditRecords(t)); n != before {
		t.Fatalf("Evaluate wrote %d audit records", n-before)
	}
	if runs := f.runPairs(); len(runs) != 0 {
		t.Fatalf("Evaluate prepared a run: %v", runs)
	}
}

// TestEvaluateNamesTheEnvironment lists the variables a run gets: the four
// fixed ones first, then git's hardening and the operator's pass-through.
func TestEvaluateNamesTheEnvironment(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.PassEnv = []string{"BASTION_TEST_PASS=1"} })
	env := strings.Join(f.r.Evaluate("ls").Env, ",")
	if env != "PATH,HOME,LANG,TMPDIR,BASTION_TEST_PASS" {
		t.Fatalf("ls env: %s", env)
	}
	env = strings.Join(f.r.Evaluate("git status").Env, ",")
	if !strings.HasPrefix(env, "PATH,HOME,LANG,TMPDIR,GIT_") || !strings.HasSuffix(env, ",BASTION_TEST_PASS") {
		t.Fatalf("git env: %s", env)
	}
}
