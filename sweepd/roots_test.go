package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestBinaryTakesItsFolderThreeWays: --root DIR, DIR as an argument and
// $BASTION_SWEEP_ROOTS each name the root sweepd starts in, and each names
// a missing one in its refusal.
func TestBinaryTakesItsFolderThreeWays(t *testing.T) {
	mcpkittest.FolderThreeWays(t, bin, func(t *testing.T) []string { return cleanEnv(t) }, nil, config.EnvSweepRoots, "sweepd ready", "")
}

// TestBinaryConfigErrorsSpeakThePersonsWords: a wrong type, a value that
// is not one of the allowed ones and a misspelt key each stop sweepd
// with the file, the line, the key and what it takes, in TOML words.
func TestBinaryConfigErrorsSpeakThePersonsWords(t *testing.T) {
	mcpkittest.ConfigErrors(t, bin, func(t *testing.T) []string { return cleanEnv(t) }, mcpkittest.WritePolicy, []mcpkittest.ConfigError{
		{Name: "wrong type", Body: "[approval]\ntimeout_seconds = \"ten\"\n", Line: "line 2", Want: []string{"approval.timeout_seconds", "a whole number", "not a string"}},
		{Name: "bad enum", Body: "\n[approval]\nfallback = \"ask\"\n", Line: "line 3", Want: []string{"fallback", `"refuse" or "agent"`, `not "ask"`}},
		{Name: "typo", Body: "[sweep]\nrots = [\"/x\"]\n", Line: "line 2", Want: []string{"unknown key sweep.rots", `did you mean "roots"?`}},
	})
}

// TestPrintClientConfigRefusesAMissingRoot: sweepd prints no snippet for
// a root that does not exist, and makes a relative one absolute.
func TestPrintClientConfigRefusesAMissingRoot(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	wantFatal(t, runBin(t, cleanEnv(t), "--print-client-config", "claude-code", missing), "no snippet", missing)
	wantFatal(t, runBin(t, cleanEnv(t), "--print-client-config", "claude-code"), "no snippet", "no folder")
	wd, _ := os.Getwd()
	dir := t.TempDir()
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := mcpkittest.Run(t, bin, cleanEnv(t, config.EnvSweepRoots+"="+rel), "--print-client-config", "claude-code")
	if r.Code != 0 || !strings.Contains(r.Stdout, config.EnvSweepRoots+"="+dir) {
		t.Fatalf("code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
