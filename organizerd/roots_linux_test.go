package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestBinaryTakesItsWorkspaceThreeWays: --root DIR, DIR as an argument
// (organizerd /path used to fail with "unexpected argument") and
// $BASTION_WORKSPACE_ROOT each name the workspace organizerd starts in,
// and each names a missing one in its refusal.
func TestBinaryTakesItsWorkspaceThreeWays(t *testing.T) {
	mcpkittest.FolderThreeWays(t, bin, func(t *testing.T) []string { return cleanEnv(t) }, nil, config.EnvWorkspaceRoot, "organizerd ready", "workspace=")
	// Two different workspaces on one command line are refused.
	mcpkittest.WantFatal(t, mcpkittest.Run(t, bin, cleanEnv(t), "--root", t.TempDir(), t.TempDir()), "one folder")
}

// TestBinaryConfigErrorsSpeakThePersonsWords: a wrong type, a value that
// is not one of the allowed ones and a misspelt key each stop organizerd
// with the file, the line, the key and what it takes, in TOML words.
func TestBinaryConfigErrorsSpeakThePersonsWords(t *testing.T) {
	mcpkittest.ConfigErrors(t, bin, func(t *testing.T) []string { return cleanEnv(t) }, mcpkittest.WritePolicy, []mcpkittest.ConfigError{
		{Name: "wrong type", Body: "[organizer]\nrecent_seconds = 2.5\n", Line: "line 2", Want: []string{"organizer.recent_seconds", "a whole number", "not a float (2.5)"}},
		{Name: "bad enum", Body: "[[organizer.skip]]\nname = \"keep-raw\"\nwhen = [\"ext:.raw\"]\nreason = \"r\"\nlayer = \"restrain\"\n", Line: "line 5",
			Want: []string{"organizer.skip[0]", `"protection" or "restraint"`, `not "restrain"`}},
		{Name: "typo", Body: "[organizer]\njournl = \"/tmp/j\"\n", Line: "line 2", Want: []string{"unknown key organizer.journl", `did you mean "journal"?`}},
	})
}

// TestPrintClientConfigRefusesAMissingWorkspace: organizerd prints no
// snippet without a workspace or with a missing one, and makes a relative
// one absolute.
func TestPrintClientConfigRefusesAMissingWorkspace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	mcpkittest.WantFatal(t, mcpkittest.Run(t, bin, cleanEnv(t), "--print-client-config", "cursor"), "no snippet", "no folder", config.EnvWorkspaceRoot)
	mcpkittest.WantFatal(t, mcpkittest.Run(t, bin, cleanEnv(t), "--print-client-config", "cursor", missing), "no snippet", missing)
	ws := t.TempDir()
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, ws)
	if err != nil {
		t.Fatal(err)
	}
	r := mcpkittest.Run(t, bin, cleanEnv(t), "--print-client-config", "cursor", rel)
	if r.Code != 0 || !strings.Contains(r.Stdout, `"`+ws+`"`) {
		t.Fatalf("code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
