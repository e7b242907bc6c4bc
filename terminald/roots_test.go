package main

import (
	"fmt"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
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
	mcpkittest.FolderThreeWays(t, bin, func(t *testing.T) []string { return cleanEnv(t) }, []string{"--config", policyNoJail(t, allow)}, config.EnvJailRoot, "terminald ready", "jail_root=")
}

// TestBinaryConfigErrorsSpeakThePersonsWords: a wrong type, a value that
// is not one of the allowed ones and a misspelt key each stop terminald
// with the file, the line, the key and what it takes, in TOML words.
func TestBinaryConfigErrorsSpeakThePersonsWords(t *testing.T) {
	mcpkittest.ConfigErrors(t, bin, func(t *testing.T) []string { return cleanEnv(t) }, policyNoJail, []mcpkittest.ConfigError{
		{Name: "wrong type", Body: "[terminal.limits]\ntimeout_seconds = \"600\"\n", Line: "line 3", Want: []string{"terminal.limits.timeout_seconds", "a whole number", `not a string ("600")`}},
		{Name: "bad enum", Body: "[terminal.sandbox]\nnetwork = \"none\"\n", Line: "line 3", Want: []string{"terminal.sandbox.network", `"deny", "allow" or "proxy"`, `not "none"`}},
		{Name: "typo", Body: "[terminal.sandbox]\nread_path = [\"/opt\"]\n", Line: "line 3", Want: []string{"unknown key terminal.sandbox.read_path", `did you mean "read_paths"?`}},
	})
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
