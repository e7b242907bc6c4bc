package mcpkit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type repeat []string

func (r *repeat) String() string     { return strings.Join(*r, ",") }
func (r *repeat) Set(s string) error { *r = append(*r, s); return nil }
func (r *repeat) Get() any           { return []string(*r) }

func parsedFlags(t *testing.T, args ...string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("srv", flag.ContinueOnError)
	var roots repeat
	var cfg, level, pc string
	var tr Transport
	fs.Var(&roots, "root", "a `DIR` (repeatable)")
	fs.StringVar(&cfg, "config", "", "policy `FILE`")
	fs.StringVar(&level, "log-level", "info", "`LEVEL`")
	tr.Flags(fs)
	PrintClientConfigFlag(fs, &pc)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestClientConfigMakesRelativeAndTildePathsAbsolute(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	fs := parsedFlags(t, "--root", "~/code", "--root", "rel dir", "--config", "p.toml", "--log-level", "debug", "--print-client-config", "cursor")
	l, err := LaunchFromFlags("srv", fs)
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	// flag.Visit goes in name order.
	want := []string{"--config", filepath.Join(wd, "p.toml"), "--log-level", "debug", "--root", filepath.Join(home, "code"), "--root", filepath.Join(wd, "rel dir")}
	if strings.Join(l.Args, "|") != strings.Join(want, "|") {
		t.Fatalf("args = %q, want %q", l.Args, want)
	}
	if !filepath.IsAbs(l.Command) {
		t.Fatalf("command %q is not absolute: a GUI client does not have your PATH", l.Command)
	}
}

func TestClientConfigJSONFormatsParseAndCarryTheLaunchLine(t *testing.T) {
	l := Launch{Server: "srv", Command: "/opt/bin/srv", Args: []string{"--root", "/home/u/code"}, Env: map[string]string{}}
	for client, top := range map[string]string{"claude-desktop": "mcpServers", "cursor": "mcpServers", "vscode": "servers"} {
		t.Run(client, func(t *testing.T) {
			var out, hint bytes.Buffer
			if err := PrintClientConfig(&out, &hint, client, l); err != nil {
				t.Fatal(err)
			}
			var v map[string]map[string]struct {
				Type    string   `json:"type"`
				Command string   `json:"command"`
				Args    []string `json:"args"`
			}
			if err := json.Unmarshal(out.Bytes(), &v); err != nil {
				t.Fatalf("%s: stdout is not only JSON (%v): %s", client, err, out.String())
			}
			s := v[top]["srv"]
			if s.Command != "/opt/bin/srv" || strings.Join(s.Args, " ") != "--root /home/u/code" {
				t.Fatalf("%s: got %+v", client, s)
			}
			if client == "vscode" && s.Type != "stdio" {
				t.Fatalf("vscode entry needs type stdio: %+v", s)
			}
			if hint.Len() == 0 {
				t.Fatalf("%s: no hint on where the snippet goes", client)
			}
		})
	}
}

func TestClientConfigClaudeCodeQuotesPathsWithSpaces(t *testing.T) {
	var out, hint bytes.Buffer
	l := Launch{Server: "srv", Command: "/opt/my bin/srv", Args: []string{"--root", "/home/u/it's here"}}
	if err := PrintClientConfig(&out, &hint, "claude-code", l); err != nil {
		t.Fatal(err)
	}
	want := `claude mcp add srv -- '/opt/my bin/srv' --root '/home/u/it'\''s here'` + "\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestClientConfigHTTPUsesTheGivenAddressAndTokenHeader(t *testing.T) {
	fs := parsedFlags(t, "--http", "127.0.0.1:9999", "--http-token-file", "/etc/tok", "--root", "/srv/code")
	l, err := LaunchFromFlags("srv", fs)
	if err != nil {
		t.Fatal(err)
	}
	var out, hint bytes.Buffer
	if err := PrintClientConfig(&out, &hint, "http", l); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"url": "http://127.0.0.1:9999/mcp"`) || !strings.Contains(out.String(), "Bearer") {
		t.Fatalf("http snippet: %s", out.String())
	}
	if !strings.Contains(hint.String(), "--http 127.0.0.1:9999 --http-token-file /etc/tok") {
		t.Fatalf("start line: %s", hint.String())
	}
}

func TestClientConfigUnknownClientListsTheKnownOnes(t *testing.T) {
	var out, errw bytes.Buffer
	fs := parsedFlags(t)
	if code := RunPrintClientConfig("srv", "emacs", fs, &out, &errw); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(errw.String(), "fatal: ") || !strings.Contains(errw.String(), "claude-desktop") || out.Len() != 0 {
		t.Fatalf("stderr %q stdout %q", errw.String(), out.String())
	}
}
