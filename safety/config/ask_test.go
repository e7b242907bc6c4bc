package config

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestAskTierLoadsIntoTheCommandPolicy: [terminal.ask] commands and a
// rule's ask_args reach the command policy, which asks about them.
func TestAskTierLoadsIntoTheCommandPolicy(t *testing.T) {
	pol, err := loadTerminal(t, `
[terminal]
jail_root = "/j"
[terminal.allowlist]
commands = ["ls", "git"]
[terminal.ask]
commands = ["stat"]
[[terminal.rules]]
command = "git"
deny_args = ["push --force"]
ask_args = ["push"]
reason = "a push publishes commits"
`)
	if err != nil {
		t.Fatal(err)
	}
	cp := pol.Terminal.CommandPolicy()
	if err := cp.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, line string
		code       result.Code
		rule       string
	}{
		{"ask list", "stat x", result.NeedsExplicitRequest, "terminal.ask"},
		{"ask_args", "git push origin main", result.NeedsExplicitRequest, `terminal.rules[0] git ask_args "push"`},
		{"deny_args of the same rule win", "git push -f", result.PolicyDenied, `terminal.rules[0] git "push --force"`},
		{"allowlisted", "git status", result.OK, "terminal.allowlist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := cp.Check(c.line)
			if d.Code != c.code || d.Rule != c.rule || d.Ask != (c.code == result.NeedsExplicitRequest) {
				t.Fatalf("%q: %s Ask=%v (%s), want %s (%s)", c.line, d.Code, d.Ask, d.Rule, c.code, c.rule)
			}
		})
	}
}

// TestCheckListsAndValidatesTheAskTier: check shows the ask list and each
// rule's ask_args as settings, and reports an ask list the command policy
// refuses (a never-allowed or denylisted program) as errors.
func TestCheckListsAndValidatesTheAskTier(t *testing.T) {
	t.Run("settings", func(t *testing.T) {
		p := &Policy{}
		p.Terminal.JailRoot = t.TempDir()
		p.Terminal.Allowlist.Commands = []string{"ls", "git"}
		p.Terminal.Ask.Commands = []string{"stat", "cat"}
		p.Terminal.Rules = []TerminalRule{{Command: "git", AskArgs: []string{"push", "stash drop"}, Reason: "r"}}
		got := settingsOf(t, p)
		for k, want := range map[string]string{
			"terminal.ask":               "2 command(s), every run approved by a person: [stat, cat]",
			"terminal.rules[0].ask_args": "git: a person approves [push, stash drop]",
			"terminal.rules":             "1 argument rule(s)",
			"terminal.allowlist":         "2 command(s)",
		} {
			if got[k] != want {
				t.Errorf("%s = %q, want %q", k, got[k], want)
			}
		}
	})
	t.Run("no ask list", func(t *testing.T) {
		p := &Policy{}
		p.Terminal.JailRoot = t.TempDir()
		p.Terminal.Allowlist.Commands = []string{"ls"}
		if got := settingsOf(t, p)["terminal.ask"]; !strings.HasPrefix(got, "none") {
			t.Errorf("terminal.ask = %q", got)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		p := &Policy{}
		p.Terminal.JailRoot = t.TempDir()
		p.Terminal.Allowlist.Commands = []string{"ls"}
		p.Terminal.Ask.Commands = []string{"bash", "cat"}
		p.Terminal.Denylist.Commands = []string{"cat"}
		p.Terminal.Rules = []TerminalRule{{Command: "ls", Reason: "r"}}
		e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
		for _, w := range []string{`terminal.ask must not contain "bash"`, `"cat" is also on terminal.denylist`, "neither deny_args nor ask_args"} {
			if !has(e.Errors, w) {
				t.Errorf("no error mentioning %s: %q", w, e.Errors)
			}
		}
	})
}

// TestUnrunnableCoversTheAskList: a command on [terminal.ask] that is not
// on [terminal.env] path is reported like an allowlisted one, once.
func TestUnrunnableCoversTheAskList(t *testing.T) {
	term := Terminal{}
	term.Allowlist.Commands = []string{"ls", "no-such-allowed"}
	term.Ask.Commands = []string{"no-such-asked", "NO-SUCH-ALLOWED"}
	var got []string
	for _, u := range term.Unrunnable() {
		got = append(got, u.Why)
	}
	if len(got) != 2 || !strings.Contains(got[0], `allowlisted command "no-such-allowed"`) ||
		!strings.Contains(got[1], `command on [terminal.ask] "no-such-asked" is not found`) {
		t.Fatalf("Unrunnable: %q", got)
	}
}
