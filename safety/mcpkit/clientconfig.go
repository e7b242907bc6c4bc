package mcpkit

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bastion-mcp/bastion/safety/config"
)

// ClientFormats are the clients PrintClientConfig knows, in the order the
// help text lists them.
var ClientFormats = []string{"claude-desktop", "claude-code", "cursor", "vscode", "http"}

// DefaultHTTPAddr is the listen address the "http" snippet uses when the
// server was not given --http.
const DefaultHTTPAddr = "127.0.0.1:8765"

// Launch is how a client starts one server: an absolute command, its
// arguments (paths already absolute: a client application does not start
// in your shell's working directory), and the BASTION_* environment
// variables that were set when the snippet was printed (those that hold
// paths made absolute too).
type Launch struct {
	Server  string
	Command string
	Args    []string
	Env     map[string]string
	// HTTP is the --http address, when one was given.
	HTTP string
	// TokenFile is the --http-token-file, when one was given.
	TokenFile string
}

// PrintClientConfigFlag registers --print-client-config on fs.
func PrintClientConfigFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "print-client-config", "", "print a copy-paste client configuration for `CLIENT` ("+strings.Join(ClientFormats, ", ")+") using the other flags given, and exit")
}

// LaunchFromFlags rebuilds the command line a client must run from the
// flags that were set on fs (fs must already be parsed). Flags whose usage
// names a `FILE` or `DIR` are made absolute (a leading ~/ is expanded);
// --print-client-config and --http / --http-token-file are left out (the
// http snippet uses them separately); a repeatable flag whose Value
// implements flag.Getter returning []string is repeated once per value.
// The command is the running executable's absolute path.
func LaunchFromFlags(server string, fs *flag.FlagSet) (Launch, error) {
	l := Launch{Server: server, Command: server, Env: map[string]string{}}
	if exe, err := os.Executable(); err == nil {
		if abs, err := filepath.EvalSymlinks(exe); err == nil {
			exe = abs
		}
		l.Command = exe
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "print-client-config":
			return
		case "http":
			l.HTTP = f.Value.String()
			return
		case "http-token-file":
			l.TokenFile, err = absPath(f.Value.String())
			return
		}
		kind, _ := flag.UnquoteUsage(f)
		vals := []string{f.Value.String()}
		if g, ok := f.Value.(flag.Getter); ok {
			if vs, ok := g.Get().([]string); ok {
				vals = vs
			}
		}
		for _, v := range vals {
			if kind == "FILE" || kind == "DIR" {
				if v, err = absPath(v); err != nil {
					return
				}
			}
			if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool {
				l.Args = append(l.Args, "--"+f.Name+"="+v)
				continue
			}
			l.Args = append(l.Args, "--"+f.Name, v)
		}
	})
	for _, a := range fs.Args() { // positional arguments are paths (CLI.TakesArgs)
		if err == nil {
			a, err = absPath(a)
			l.Args = append(l.Args, a)
		}
	}
	if err != nil {
		return l, err
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "BASTION_") && v != "" {
			l.Env[k] = config.AbsEnv(k, v)
		}
	}
	return l, nil
}

func absPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand %q: no home directory", p)
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return filepath.Abs(p)
}

// PrintClientConfig writes the snippet for client on out (only the
// snippet, so it can be piped into a file) and where to put it on hint.
// An unknown client is an error listing the known ones.
func PrintClientConfig(out, hint io.Writer, client string, l Launch) error {
	stdio := map[string]any{"command": l.Command, "args": nonNil(l.Args)}
	if len(l.Env) > 0 {
		stdio["env"] = l.Env
	}
	switch client {
	case "claude-desktop":
		fmt.Fprintln(hint, "# Merge into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: %APPDATA%\\Claude\\, Linux: ~/.config/Claude/), then restart Claude Desktop.")
		return writeJSON(out, map[string]any{"mcpServers": map[string]any{l.Server: stdio}})
	case "cursor":
		fmt.Fprintln(hint, "# Merge into ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project).")
		return writeJSON(out, map[string]any{"mcpServers": map[string]any{l.Server: stdio}})
	case "vscode":
		fmt.Fprintln(hint, "# Merge into .vscode/mcp.json in your workspace (or run \"MCP: Open User Configuration\").")
		s := map[string]any{"type": "stdio", "command": l.Command, "args": nonNil(l.Args)}
		if len(l.Env) > 0 {
			s["env"] = l.Env
		}
		return writeJSON(out, map[string]any{"servers": map[string]any{l.Server: s}})
	case "claude-code":
		fmt.Fprintln(hint, "# Run in your shell; add --scope user to use it in every project.")
		parts := []string{"claude", "mcp", "add"}
		for _, k := range sortedKeys(l.Env) {
			parts = append(parts, "-e", shellQuote(k+"="+l.Env[k]))
		}
		parts = append(parts, shellQuote(l.Server), "--", shellQuote(l.Command))
		for _, a := range l.Args {
			parts = append(parts, shellQuote(a))
		}
		_, err := fmt.Fprintln(out, strings.Join(parts, " "))
		return err
	case "http":
		addr := l.HTTP
		if addr == "" {
			addr = DefaultHTTPAddr
		}
		start := []string{shellQuote(l.Command)}
		for _, a := range l.Args {
			start = append(start, shellQuote(a))
		}
		start = append(start, "--http", shellQuote(addr))
		entry := map[string]any{"type": "http", "url": "http://" + addr + "/mcp"}
		if l.TokenFile != "" {
			start = append(start, "--http-token-file", shellQuote(l.TokenFile))
			entry["headers"] = map[string]string{"Authorization": "Bearer <contents of " + l.TokenFile + ">"}
		}
		fmt.Fprintf(hint, "# Start the server yourself (it serves Streamable HTTP at /mcp):\n#   %s\n# then point any Streamable HTTP client at the URL:\n", strings.Join(start, " "))
		return writeJSON(out, map[string]any{"mcpServers": map[string]any{l.Server: entry}})
	}
	return fmt.Errorf("--print-client-config %q: want one of %s", client, strings.Join(ClientFormats, ", "))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RunPrintClientConfig is the whole --print-client-config mode for a
// server's main: it rebuilds the launch line from fs's set flags, prints the
// snippet for client on stdout and the hint on stderr, and returns the exit
// code (0, or 2 with one "fatal:" line).
func RunPrintClientConfig(server, client string, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	l, err := LaunchFromFlags(server, fs)
	if err == nil {
		err = PrintClientConfig(stdout, stderr, client, l)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fatal: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 2
	}
	return 0
}
