package config

import (
	"regexp"
	"strings"
	"testing"
)

// goTypeWords are what a message that speaks Go instead of TOML contains.
var goTypeWords = regexp.MustCompile(`struct field|of type|config\.[A-Z]|\[\]string|map\[|\bint\b|\bbool\b`)

// TestConfigErrorsNameFileLineKeyAndWhatIsExpected: a wrong type, a value
// outside the allowed ones and a misspelt key each stop Load with the
// file, the line, the key, what the key takes (or the key meant), and no
// Go type name.
func TestConfigErrorsNameFileLineKeyAndWhatIsExpected(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		line       string
		want       []string
	}{
		{"wrong type: string for a number", "[approval]\n\ntimeout_seconds = \"ten\"\n", "line 3",
			[]string{"approval.timeout_seconds", "must be a whole number", `not a string ("ten")`}},
		{"wrong type: float for a number", "[terminal.limits]\ntimeout_seconds = 1.5\n", "line 2",
			[]string{"terminal.limits.timeout_seconds", "a whole number", "not a float (1.5)"}},
		{"wrong type: string for a list", "[sweep]\nroots = \"/home/me/code\"\n", "line 2",
			[]string{"sweep.roots", "a list of strings", "not a string"}},
		{"wrong type: list for a table", "[terminal]\njail_root = \"/j\"\nallowlist = [\"go\"]\n", "line 3",
			[]string{"terminal.allowlist", "a table", "[terminal.allowlist]", "commands", "not a list"}},
		{"wrong type: string for true or false", "[redaction]\nentropy = \"yes\"\n", "line 2",
			[]string{"redaction.entropy", "true or false"}},
		{"wrong type in the second array table", "[[organizer.skip]]\nname = \"a\"\n[[organizer.skip]]\nname = 1\n", "line 4",
			[]string{"organizer.skip[1].name", "a string", "not an integer (1)"}},
		{"bad enum: approval", "[approval]\nreclaim = \"humans\"\n", "line 2",
			[]string{"reclaim", `"human" or "agent"`, `not "humans"`}},
		{"bad enum: network", "[terminal.sandbox]\n# deny, allow or proxy\nnetwork = \"proxi\"\n", "line 3",
			[]string{"terminal.sandbox.network", `"deny", "allow" or "proxy"`, `not "proxi" (did you mean "proxy"?)`}},
		{"bad enum: audit_fail_mode", "audit_log = \"/var/a.jsonl\"\naudit_fail_mode = \"closd\"\n", "line 2",
			[]string{"audit_fail_mode", `"closed" or "open"`, `(did you mean "closed"?)`}},
		{"out of range", "[terminal.limits]\nmemory_mb = 1\n", "line 2",
			[]string{"terminal.limits.memory_mb", "between 16 and 65536"}},
		{"out of range: sessions", "[terminal.sessions]\nidle_minutes = 5\nmax = 99\n", "line 3",
			[]string{"terminal.sessions.max", "between 1 and 64 sessions"}},
		{"registry preset misspelt", "[terminal.sandbox]\nnetwork = \"proxy\"\nregistries = [\"npn\"]\n", "line 3",
			[]string{"terminal.sandbox.registries", `"npn"`, `did you mean "npm"?`}},
		{"typo in a key", "[approval]\nreclam = \"human\"\n", "line 2",
			[]string{"unknown key approval.reclam", `did you mean "reclaim"?`, "[approval] takes reclaim, apply_plan"}},
		{"typo in a table", "[approvl]\nreclaim = \"human\"\n", "line 1",
			[]string{"unknown key approvl", `did you mean "approval"?`}},
		{"transposed letters", "[terminal.sandbox]\nnetwrok = \"allow\"\n", "line 2",
			[]string{"terminal.sandbox.netwrok", `did you mean "network"?`}},
		{"typo inside a list of tables", "[redaction]\npatterns = [{name = \"a\", regexp = \"x\"}]\n", "line 2",
			[]string{"redaction.patterns[0].regexp", `did you mean "regex"?`}},
		{"typo in an array table", "[[terminal.rules]]\ncommand = \"git\"\nreason = \"r\"\ndeny_arg = [\"-c\"]\n", "line 4",
			[]string{"terminal.rules[0].deny_arg", `did you mean "deny_args"?`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, dir, "policy.toml", c.body)
			_, err := Load(p)
			wantFatal(t, err, append([]string{"policy file " + p + ", " + c.line + ":"}, c.want...)...)
			if m := goTypeWords.FindString(err.Error()); m != "" {
				t.Errorf("the message speaks Go (%q): %v", m, err)
			}
		})
	}
}

// TestConfigErrorFromEnvironmentNamesTheVariable: a bad value that came
// from an environment override is not blamed on a line of the file.
func TestConfigErrorFromEnvironmentNamesTheVariable(t *testing.T) {
	clearEnv(t)
	p := write(t, t.TempDir(), "policy.toml", "audit_fail_mode = \"closed\"\n")
	t.Setenv(EnvAuditFailMode, "sometimes")
	_, err := Load(p)
	wantFatal(t, err, "$"+EnvAuditFailMode, "audit_fail_mode", `not "sometimes"`)
	if strings.Contains(err.Error(), "line 1") {
		t.Errorf("blames the file for the environment: %v", err)
	}
}

func TestEditDistanceCountsTranspositionsOnce(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"network", "network", 0}, {"netwrok", "network", 1}, {"reclam", "reclaim", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if got := closest("zzzzzz", []string{"roots", "disable"}); got != "" {
		t.Errorf("a far key got a suggestion: %q", got)
	}
}
