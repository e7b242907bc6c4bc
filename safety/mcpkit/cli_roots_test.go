package mcpkit

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
)

// printSnippet runs --print-client-config claude-code for a CLI named
// server that takes its roots the shared way, and returns the exit code,
// the snippet and stderr.
func printSnippet(t *testing.T, server string, policyRequired bool, args ...string) (int, string, string) {
	t.Helper()
	cli := NewCLI(server, "1", "test", "", io.Discard)
	cli.TakeRoots("a `DIR`")
	cli.PolicyRequired = policyRequired
	var out, errb bytes.Buffer
	code, done := cli.Parse(append([]string{"--print-client-config", "claude-code"}, args...), &out, &errb)
	if !done {
		t.Fatalf("Parse did not end at --print-client-config")
	}
	return code, out.String(), errb.String()
}

func clearBastionEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BASTION_") {
			t.Setenv(k, "")
		}
	}
}

// TestPrintClientConfigRefusesSnippetsThatCouldNotStart: no policy where
// the server needs one, a policy that does not load, no folder, and a
// folder that does not exist are each refused with the reason, and
// nothing is printed on stdout.
func TestPrintClientConfigRefusesSnippetsThatCouldNotStart(t *testing.T) {
	clearBastionEnv(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(good, []byte("[terminal]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("[approval]\nreclaim = \"maybe\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name, server string
		required     bool
		args         []string
		want         []string
	}{
		{"no policy where one is required", "terminald", true, []string{dir}, []string{"no policy", "--config FILE"}},
		{"a policy that does not load", "organizerd", false, []string{"--config", bad, dir}, []string{"policy does not load", "line 2", "reclaim"}},
		{"no folder", "organizerd", false, nil, []string{"no folder", "--root DIR", config.EnvWorkspaceRoot, "workspace_root"}},
		{"a missing folder", "terminald", true, []string{"--config", good, missing}, []string{missing}},
		{"a missing folder among several", "sweepd", false, []string{"--root", missing, dir}, []string{missing}},
		{"two folders for a one-folder server", "organizerd", false, []string{"--root", dir, good}, []string{"one folder"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := printSnippet(t, c.server, c.required, c.args...)
			if code == 0 || out != "" {
				t.Fatalf("printed a snippet that could not start (code %d): %s", code, out)
			}
			if !strings.HasPrefix(errs, "fatal: --print-client-config: no snippet") {
				t.Fatalf("stderr %q", errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("the refusal %q does not mention %q", errs, w)
				}
			}
		})
	}
}

// TestPrintClientConfigMakesRelativeRootsAbsolute: a relative folder, as
// an argument or in a BASTION_* variable, reaches the snippet absolute (a
// client application does not start in the shell's working directory).
func TestPrintClientConfigMakesRelativeRootsAbsolute(t *testing.T) {
	clearBastionEnv(t)
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "proj", "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	t.Setenv(config.EnvWorkspaceRoot, "proj/ws")
	code, out, errs := printSnippet(t, "organizerd", false)
	if code != 0 {
		t.Fatalf("refused: %s", errs)
	}
	if want := config.EnvWorkspaceRoot + "=" + filepath.Join(base, "proj", "ws"); !strings.Contains(out, want) {
		t.Fatalf("snippet %q does not carry %s", out, want)
	}
	t.Setenv(config.EnvWorkspaceRoot, "")
	code, out, errs = printSnippet(t, "organizerd", false, "proj")
	if code != 0 || !strings.Contains(out, " "+filepath.Join(base, "proj")) {
		t.Fatalf("code %d, snippet %q, stderr %q", code, out, errs)
	}
}

// TestClaudeDesktopHintNamesEveryPlatform: the hint says where the file
// is on macOS, Windows and Linux.
func TestClaudeDesktopHintNamesEveryPlatform(t *testing.T) {
	var out, hint bytes.Buffer
	if err := PrintClientConfig(&out, &hint, "claude-desktop", Launch{Server: "s", Command: "/bin/s"}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Library/Application Support/Claude", "%APPDATA%", "~/.config/Claude/"} {
		if !strings.Contains(hint.String(), w) {
			t.Errorf("hint %q does not name %s", hint.String(), w)
		}
	}
}
