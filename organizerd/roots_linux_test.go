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
					env = append(env, config.EnvWorkspaceRoot+"="+dir)
				}
				r := mcpkittest.Run(t, bin, env, args...)
				if strings.HasSuffix(dir, "missing") {
					mcpkittest.WantFatal(t, r, dir)
					continue
				}
				if r.Code != 0 || !strings.Contains(r.Stderr, "organizerd ready") || !strings.Contains(r.Stderr, "workspace="+dir) {
					t.Fatalf("%s: code %d, stderr %q", way, r.Code, r.Stderr)
				}
			}
		})
	}
	// Two different workspaces on one command line are refused.
	mcpkittest.WantFatal(t, mcpkittest.Run(t, bin, cleanEnv(t), "--root", t.TempDir(), t.TempDir()), "one folder")
}

// TestBinaryConfigErrorsSpeakThePersonsWords: a wrong type, a value that
// is not one of the allowed ones and a misspelt key each stop organizerd
// with the file, the line, the key and what it takes, in TOML words.
func TestBinaryConfigErrorsSpeakThePersonsWords(t *testing.T) {
	for _, c := range []struct {
		name, body, line string
		want             []string
	}{
		{"wrong type", "[organizer]\nrecent_seconds = 2.5\n", "line 2", []string{"organizer.recent_seconds", "a whole number", "not a float (2.5)"}},
		{"bad enum", "[[organizer.skip]]\nname = \"keep-raw\"\nwhen = [\"ext:.raw\"]\nreason = \"r\"\nlayer = \"restrain\"\n", "line 5",
			[]string{"organizer.skip[0]", `"protection" or "restraint"`, `not "restrain"`}},
		{"typo", "[organizer]\njournl = \"/tmp/j\"\n", "line 2", []string{"unknown key organizer.journl", `did you mean "journal"?`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(pol, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			r := mcpkittest.Run(t, bin, cleanEnv(t), "--config", pol, t.TempDir())
			mcpkittest.WantFatal(t, r, append([]string{"policy file " + pol + ", " + c.line + ":"}, c.want...)...)
			if strings.Contains(r.Stderr, "struct field") || strings.Contains(r.Stderr, "config.") {
				t.Fatalf("speaks Go: %s", r.Stderr)
			}
		})
	}
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
