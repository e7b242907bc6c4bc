package command

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// askPolicy allows ls, git, tar and cp, asks about every run of stat and
// cat (cat is allowlisted too), and has one git rule with both lists.
func askPolicy() *Policy {
	return &Policy{
		Allow: []string{"ls", "git", "tar", "cp", "cat"},
		Ask:   []string{"stat", "cat"},
		Deny:  []string{"rm"},
		Rules: []Rule{
			{Command: "git", AskArgs: []string{"push"}, Reason: "a push publishes commits"},
			{Command: "git", DenyArgs: []string{"push --force"}, Reason: "a force-push rewrites shared history"},
			{Command: "tar", DenyArgs: []string{"path:.git"}, AskArgs: []string{"--extract"}, Reason: "extracting writes files"},
			{Command: "stat", DenyArgs: []string{"--file-system"}, Reason: "the test denies stat -f"},
		},
	}
}

// TestAskPrecedence: deny wins over ask, and ask wins over allow, whatever
// the order of the lists and rules.
func TestAskPrecedence(t *testing.T) {
	p := askPolicy()
	for _, c := range []struct {
		name, line string
		code       result.Code
		rule       string // prefix of Decision.Rule
	}{
		{"allowlisted, no rule", "ls -la", result.OK, "terminal.allowlist"},
		{"ask_args win over allow", "git push origin main", result.NeedsExplicitRequest, `terminal.rules[0] git ask_args "push"`},
		{"deny_args of a later rule win over ask_args", "git push -f origin main", result.PolicyDenied, `terminal.rules[1] git "push --force"`},
		{"deny_args win over ask_args of the same rule", "tar -xf x.tar .git/config", result.PolicyDenied, `terminal.rules[2] tar "path:.git"`},
		{"ask_args of the same rule", "tar -xf x.tar src", result.NeedsExplicitRequest, `terminal.rules[2] tar ask_args "--extract"`},
		{"built-in rule wins over ask_args", "git -c core.pager=id push", result.PolicyDenied, "builtin["},
		{"ask list without the allowlist", "stat go.mod", result.NeedsExplicitRequest, "terminal.ask"},
		{"ask list wins over the allowlist", "cat go.mod", result.NeedsExplicitRequest, "terminal.ask"},
		{"deny_args win over the ask list", "stat --file-system /", result.PolicyDenied, `terminal.rules[3] stat "--file-system"`},
		{"denylist", "rm x", result.PolicyDenied, "terminal.denylist"},
		{"on no list", "head x", result.PolicyDenied, "terminal.allowlist"},
		{"unknown git subcommand wins over ask_args", "git pushx", result.PolicyDenied, "builtin.git-subcommand"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := p.Check(c.line)
			if d.Code != c.code || !strings.HasPrefix(d.Rule, c.rule) || d.Reason == "" {
				t.Fatalf("%q: %s (%s: %s), want %s by %s", c.line, d.Code, d.Rule, d.Reason, c.code, c.rule)
			}
			wantAsk := c.code == result.NeedsExplicitRequest
			if d.Ask != wantAsk || d.Allowed != (c.code == result.OK) || (err == nil) != d.Allowed {
				t.Fatalf("%q: Ask=%v Allowed=%v err=%v", c.line, d.Ask, d.Allowed, err)
			}
			if wantAsk && result.CodeOf(err) != result.NeedsExplicitRequest {
				t.Fatalf("%q: an ask decision's error is %v, want NEEDS_EXPLICIT_REQUEST", c.line, err)
			}
		})
	}
	if d := p.Evaluate([]string{"head", "x"}); !strings.Contains(d.Reason, "once a person approves: cat, stat") {
		t.Errorf("the allowlist refusal does not name the ask list: %s", d.Reason)
	}
}

// TestDenylistWinsOverAskList: a name on both lists is refused (and
// Validate refuses the policy).
func TestDenylistWinsOverAskList(t *testing.T) {
	p := &Policy{Allow: []string{"ls"}, Ask: []string{"cat"}, Deny: []string{"CAT"}}
	if d := p.Evaluate([]string{"cat", "x"}); d.Ask || d.Allowed || d.Rule != "terminal.denylist" {
		t.Errorf("cat on the ask list and the denylist: %+v", d)
	}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "also on terminal.denylist") {
		t.Errorf("Validate: %v", err)
	}
}

// TestNeverAllowedProgramsCannotBeAsked: shells, wrappers and interpreters
// on the ask list are refused as never allowed, not asked about, and
// Validate refuses them; under the sandbox profile they may be asked
// about like any program.
func TestNeverAllowedProgramsCannotBeAsked(t *testing.T) {
	for _, argv := range [][]string{{"bash", "-c", "id"}, {"env", "rm", "x"}, {"python3", "-c", "1"}, {"xargs", "rm"}} {
		t.Run(argv[0], func(t *testing.T) {
			p := &Policy{Allow: []string{"ls"}, Ask: []string{argv[0]}}
			if d := p.Evaluate(argv); d.Ask || d.Allowed || d.Rule != "builtin.never" || d.Code != result.PolicyDenied {
				t.Errorf("%q on the ask list: %+v", argv, d)
			}
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), "terminal.ask must not contain") || !strings.Contains(err.Error(), "cannot be approved") {
				t.Errorf("Validate: %v", err)
			}
			p.Sandboxed = true
			if d := p.Evaluate(argv); !d.Ask || d.Rule != "terminal.ask" {
				t.Errorf("%q on the ask list of the sandbox profile: %+v", argv, d)
			}
			if err := p.Validate(); err != nil {
				t.Errorf("Validate (sandbox): %v", err)
			}
		})
	}
}

// TestAskArgsMatchLikeDenyArgs reuses the deny tests' spellings: each
// shipped rule that is not built in, turned from deny_args into ask_args,
// asks about exactly the corpus lines it refused (every option spelling,
// abbreviation, bundle, '*' prefix and path: component there is), and the
// corpus's near misses that ran still run. The force-push spellings of
// TestForcePushEverySpellingIsDenied are checked the same way.
func TestAskArgsMatchLikeDenyArgs(t *testing.T) {
	std := Standard().Policy()
	lines := readCorpus(t)
	for i, r := range std.Rules {
		if len(r.DenyArgs) == 0 || slices.ContainsFunc(builtinRules, func(b Rule) bool { return slices.Equal(b.DenyArgs, r.DenyArgs) }) {
			continue // an ask rule already, or a built-in rule, which refuses whatever the policy says
		}
		t.Run(fmt.Sprintf("%s/%d", r.Command, i), func(t *testing.T) {
			asking := std
			asking.Rules = slices.Clone(std.Rules)
			asking.Rules[i].DenyArgs, asking.Rules[i].AskArgs = nil, r.DenyArgs
			denyRule := fmt.Sprintf("terminal.rules[%d] ", i)
			askRule := fmt.Sprintf("terminal.rules[%d] %s ask_args ", i, r.Command)
			n := 0
			for _, c := range lines {
				before, _ := std.Check(c.line)
				after, _ := asking.Check(c.line)
				switch {
				case before.Code == result.PolicyDenied && strings.HasPrefix(before.Rule, denyRule):
					n++
					if !after.Ask || !strings.HasPrefix(after.Rule, askRule) {
						t.Errorf("corpus:%d %q: refused by deny_args, but the same entries as ask_args give %s (%s)", c.no, c.line, after.Code, after.Rule)
					}
				case before.Code != after.Code || before.Rule != after.Rule:
					t.Errorf("corpus:%d %q: %s (%s) became %s (%s)", c.no, c.line, before.Code, before.Rule, after.Code, after.Rule)
				}
			}
			if n == 0 {
				t.Errorf("no corpus line is refused by rule %d %q", i, r.DenyArgs)
			}
		})
	}
	t.Run("force-push spellings", func(t *testing.T) {
		p := &Policy{Allow: []string{"git"}, Rules: []Rule{{Command: "git", AskArgs: gitForcePush.DenyArgs, Reason: "r"}}}
		mustAsk(t, p, forcePushSpellings...)
		mustAllow(t, p, plainPushes...)
	})
}

// TestValidateAskTier: what Validate refuses in the ask list and ask_args,
// and what it accepts.
func TestValidateAskTier(t *testing.T) {
	git := func(r Rule) []Rule { r.Command = "git"; return []Rule{r} }
	for _, c := range []struct {
		name string
		p    Policy
		want string // "" when the policy is valid
	}{
		{"empty ask name", Policy{Ask: []string{""}}, "terminal.ask has an empty command name"},
		{"ask path", Policy{Ask: []string{"/bin/ls"}}, "must be a bare program name"},
		{"ask name with a space", Policy{Ask: []string{"git push"}}, "is not a program name"},
		{"never-allowed program", Policy{Ask: []string{"sh"}}, "terminal.ask must not contain"},
		{"asked and denied", Policy{Ask: []string{"cat"}, Deny: []string{"cat"}}, "also on terminal.denylist"},
		{"rule with neither list", Policy{Allow: []string{"git"}, Rules: git(Rule{Reason: "r"})}, "neither deny_args nor ask_args"},
		{"ask_args that do not compile", Policy{Allow: []string{"git"}, Rules: git(Rule{AskArgs: []string{"a*b"}, Reason: "r"})}, `ask_args "a*b"`},
		{"empty ask_args entry", Policy{Allow: []string{"git"}, Rules: git(Rule{AskArgs: []string{" "}, Reason: "r"})}, "an empty entry"},
		{"ask rule without a reason", Policy{Allow: []string{"git"}, Rules: git(Rule{AskArgs: []string{"push"}})}, "has no reason"},
		{"rule for a command on no list", Policy{Allow: []string{"ls"}, Rules: git(Rule{AskArgs: []string{"push"}, Reason: "r"})},
			"neither allowlisted nor on the ask list"},
		{"ask_args only", Policy{Allow: []string{"git"}, Rules: git(Rule{AskArgs: []string{"push", "path:.git"}, Reason: "r"})}, ""},
		{"both lists", Policy{Allow: []string{"git"}, Rules: git(Rule{DenyArgs: []string{"push --force"}, AskArgs: []string{"push"}, Reason: "r"})}, ""},
		{"rule for an asked-about command", Policy{Ask: []string{"git"}, Rules: git(Rule{DenyArgs: []string{"push --force"}, Reason: "r"})}, ""},
		{"asked and allowlisted", Policy{Allow: []string{"cat"}, Ask: []string{"cat"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "":
			case err == nil || !strings.Contains(err.Error(), c.want):
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			case result.CodeOf(err) != result.InvalidRequest:
				t.Fatalf("%v is not INVALID_REQUEST", err)
			}
		})
	}
}

// TestLoadSectionReadsTheAskTier: [terminal.ask] and ask_args are read
// strictly, and the result asks.
func TestLoadSectionReadsTheAskTier(t *testing.T) {
	doc := `[terminal.allowlist]
commands = ["git"]
[terminal.ask]
commands = ["stat"]
[[terminal.rules]]
command = "git"
ask_args = ["push"]
reason = "a push publishes commits"
`
	p, err := LoadSection([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	mustAsk(t, &p, "git push", "stat x")
	mustAllow(t, &p, "git status")
	if _, err := LoadSection([]byte("[terminal.ask]\ncommand = [\"stat\"]\n")); err == nil {
		t.Error("accepted [terminal.ask] command (for commands)")
	}
	var re *result.Error
	if _, err := LoadSection([]byte("[terminal.ask]\ncommands = [\"bash\"]\n")); !errors.As(err, &re) {
		t.Errorf("accepted bash on the ask list: %v", err)
	}
}
