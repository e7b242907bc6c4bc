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
	for _, way := range []string{"flag", "argument", "environment"} {
		t.Run(way, func(t *testing.T) {
			for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
				env, args := cleanEnv(t), []string{}
				switch way {
				case "flag":
					args = []string{"--root", dir}
				case "argument":
					args = []string{dir}
				case "environment":
					env = append(env, config.EnvSweepRoots+"="+dir)
				}
				r := runBin(t, env, args...)
				if strings.HasSuffix(dir, "missing") {
					wantFatal(t, r, dir)
					continue
				}
				if r.Code != 0 || !strings.Contains(r.Stderr, "sweepd ready") || !strings.Contains(r.Stderr, dir) {
					t.Fatalf("%s: code %d, stderr %q", way, r.Code, r.Stderr)
				}
			}
		})
	}
}

// TestBinaryConfigErrorsSpeakThePersonsWords: a wrong type, a value that
// is not one of the allowed ones and a misspelt key each stop sweepd
// with the file, the line, the key and what it takes, in TOML words.
func TestBinaryConfigErrorsSpeakThePersonsWords(t *testing.T) {
	for _, c := range configErrorCases {
		t.Run(c.name, func(t *testing.T) {
			pol := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(pol, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runBin(t, cleanEnv(t), "--config", pol, t.TempDir())
			wantFatal(t, r, append([]string{"policy file " + pol + ", " + c.line + ":"}, c.want...)...)
			if strings.Contains(r.Stderr, "struct field") || strings.Contains(r.Stderr, "config.") {
				t.Fatalf("speaks Go: %s", r.Stderr)
			}
		})
	}
}

// configErrorCases are the table of TestBinaryConfigErrorsSpeakThePersonsWords.
var configErrorCases = []struct {
	name, body, line string
	want             []string
}{
	{"wrong type", "[approval]\ntimeout_seconds = \"ten\"\n", "line 2", []string{"approval.timeout_seconds", "a whole number", "not a string"}},
	{"bad enum", "\n[approval]\nfallback = \"ask\"\n", "line 3", []string{"fallback", `"refuse" or "agent"`, `not "ask"`}},
	{"typo", "[sweep]\nrots = [\"/x\"]\n", "line 2", []string{"unknown key sweep.rots", `did you mean "roots"?`}},
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
