package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
)

// policyNoJail writes a policy without jail_root, with its audit log in
// its own directory, and returns its path.
func policyNoJail(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.toml")
	doc := fmt.Sprintf("audit_log = %q\n%s", filepath.Join(dir, "state", "audit.jsonl"), body)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBinaryTakesItsJailThreeWays: --root DIR, DIR as an argument and
// $BASTION_JAIL_ROOT each name the jail terminald starts in, and each
// names a missing one in its refusal.
func TestBinaryTakesItsJailThreeWays(t *testing.T) {
	pol := policyNoJail(t, allow)
	for _, way := range []string{"flag", "argument", "environment"} {
		t.Run(way, func(t *testing.T) {
			for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
				env, args := cleanEnv(t), []string{"--config", pol}
				switch way {
				case "flag":
					args = append(args, "--root", dir)
				case "argument":
					args = append(args, dir)
				case "environment":
					env = append(env, config.EnvJailRoot+"="+dir)
				}
				r := runBin(t, env, args...)
				if strings.HasSuffix(dir, "missing") {
					wantFatal(t, r, dir)
					continue
				}
				if r.Code != 0 || !strings.Contains(r.Stderr, "terminald ready") || !strings.Contains(r.Stderr, "jail_root="+dir) {
					t.Fatalf("%s: code %d, stderr %q", way, r.Code, r.Stderr)
				}
			}
		})
	}
}

// TestBinaryConfigErrorsSpeakThePersonsWords: a wrong type, a value that
// is not one of the allowed ones and a misspelt key each stop terminald
// with the file, the line, the key and what it takes, in TOML words.
func TestBinaryConfigErrorsSpeakThePersonsWords(t *testing.T) {
	for _, c := range []struct {
		name, body, line string
		want             []string
	}{
		{"wrong type", "[terminal.limits]\ntimeout_seconds = \"600\"\n", "line 3", []string{"terminal.limits.timeout_seconds", "a whole number", `not a string ("600")`}},
		{"bad enum", "[terminal.sandbox]\nnetwork = \"none\"\n", "line 3", []string{"terminal.sandbox.network", `"deny", "allow" or "proxy"`, `not "none"`}},
		{"typo", "[terminal.sandbox]\nread_path = [\"/opt\"]\n", "line 3", []string{"unknown key terminal.sandbox.read_path", `did you mean "read_paths"?`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol := policyNoJail(t, c.body)
			r := runBin(t, cleanEnv(t), "--config", pol, t.TempDir())
			wantFatal(t, r, append([]string{"policy file " + pol + ", " + c.line + ":"}, c.want...)...)
			if strings.Contains(r.Stderr, "struct field") || strings.Contains(r.Stderr, "config.") {
				t.Fatalf("speaks Go: %s", r.Stderr)
			}
		})
	}
}

// TestPrintClientConfigRefusesWithoutPolicyOrJail: terminald prints no
// snippet without a policy, without a jail or with a missing one, and
// makes a relative jail absolute.
func TestPrintClientConfigRefusesWithoutPolicyOrJail(t *testing.T) {
	jail := t.TempDir()
	pol := policyNoJail(t, allow)
	missing := filepath.Join(t.TempDir(), "missing")
	wantFatal(t, runBin(t, cleanEnv(t), "--print-client-config", "claude-desktop", jail), "no snippet", "no policy", "--config FILE")
	wantFatal(t, runBin(t, cleanEnv(t), "--print-client-config", "claude-desktop", "--config", pol), "no snippet", "no folder", config.EnvJailRoot)
	wantFatal(t, runBin(t, cleanEnv(t), "--print-client-config", "claude-desktop", "--config", pol, missing), "no snippet", missing)
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, jail)
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, cleanEnv(t), "--print-client-config", "claude-desktop", "--config", pol, rel)
	if r.Code != 0 || !strings.Contains(r.Stdout, `"`+jail+`"`) || !strings.Contains(r.Stderr, "~/.config/Claude/") {
		t.Fatalf("code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
