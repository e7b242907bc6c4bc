package mcpkit

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
)

// TestFallbackConfigOnlyWhenNothingElseNamesAPolicy: --fallback-config is an
// installer's default; --config and $BASTION_POLICY_FILE both win over it.
func TestFallbackConfigOnlyWhenNothingElseNamesAPolicy(t *testing.T) {
	cases := []struct {
		name, env string
		args      []string
		want      string
	}{
		{"alone", "", []string{"--fallback-config", "bundle.toml"}, "bundle.toml"},
		{"config wins", "", []string{"--fallback-config", "bundle.toml", "--config", "mine.toml"}, "mine.toml"},
		{"env wins", "env.toml", []string{"--fallback-config", "bundle.toml"}, ""}, // config.Load reads the variable
		{"absent", "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(config.EnvPolicyFile, c.env)
			cli := NewCLI("x", "1", "test", "", io.Discard)
			if code, done := cli.Parse(c.args, io.Discard, io.Discard); done {
				t.Fatalf("Parse(%q) ended with %d", c.args, code)
			}
			if cli.ConfigPath != c.want {
				t.Fatalf("ConfigPath = %q, want %q", cli.ConfigPath, c.want)
			}
		})
	}
}

// TestStrayArgumentRefusedUnlessTakesArgs: a server that takes no positional
// argument refuses one; one that does (sweepd's roots) gets them in Args.
func TestStrayArgumentRefusedUnlessTakesArgs(t *testing.T) {
	cli := NewCLI("x", "1", "test", "", io.Discard)
	if code, done := cli.Parse([]string{"stray"}, io.Discard, io.Discard); !done || code == 0 {
		t.Fatalf("stray argument: done %v code %d, want a refusal", done, code)
	}
	cli = NewCLI("x", "1", "test", "", io.Discard)
	cli.TakesArgs = true
	if _, done := cli.Parse([]string{"--log-level", "warn", "a", "b"}, io.Discard, io.Discard); done || len(cli.Args) != 2 || cli.Args[1] != "b" {
		t.Fatalf("TakesArgs: done %v, Args %q", done, cli.Args)
	}
}

// TestPrintClientConfigCarriesPositionalPaths: a server that takes paths as
// arguments gets them, absolute, in the client snippet; one that does not
// refuses them rather than dropping them silently.
func TestPrintClientConfigCarriesPositionalPaths(t *testing.T) {
	var out strings.Builder
	cli := NewCLI("x", "1", "test", "", io.Discard)
	cli.TakesArgs = true
	if code, done := cli.Parse([]string{"--print-client-config", "claude-code", "rel/dir"}, &out, io.Discard); !done || code != 0 {
		t.Fatalf("print-client-config: done %v code %d", done, code)
	}
	abs, _ := filepath.Abs("rel/dir")
	if !strings.Contains(out.String(), abs) {
		t.Fatalf("the snippet does not carry %s: %s", abs, out.String())
	}
	cli = NewCLI("x", "1", "test", "", io.Discard)
	if code, done := cli.Parse([]string{"--print-client-config", "claude-code", "rel/dir"}, io.Discard, io.Discard); !done || code == 0 {
		t.Fatalf("a server without positional arguments printed a snippet (code %d)", code)
	}
}
