// Package mcpkittest is for tests of Bastion servers: it builds a server
// binary once for a package's tests, starts mcp-go clients (in-process or
// over stdio) the way a real client does, decodes every tool result as the
// one OperationResult, and compares output with golden files (Golden, which
// owns the -update flag of every package that uses it, and shows a line
// diff on a mismatch).
//
// It refuses to be anything but test support: it imports testing, and no
// non-test code may import it (safety/mcpkit's TestOnlyMcpkitImportsMcpGo
// checks this for the safety module). It does not import mcpkit, so
// mcpkit's own tests can use it. Its checks only add to what a test proves:
// every result it returns has already been checked to be well formed.
package mcpkittest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/risk"
)

// ProtocolVersion is the MCP protocol version every client here asks for
// and requires the server to accept.
const ProtocolVersion = "2025-06-18"

// RunWithBinary is a TestMain body: it builds the main package in the
// current directory into a temporary directory as name, stores the path in
// *bin, runs the tests, removes the binary and exits with the tests' code.
// A failed build exits with status 1 before any test runs.
func RunWithBinary(m *testing.M, name string, bin *string) {
	dir, err := os.MkdirTemp("", name+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", *bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n", name, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// CleanEnv is an environment with nothing inherited that could configure a
// server: PATH, and HOME and XDG_STATE_HOME in a fresh temporary directory,
// followed by extra.
func CleanEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state")}, extra...)
}

// Ran is how one run of a binary ended.
type Ran struct {
	Code           int
	Stdout, Stderr string
}

// Run runs bin with exactly env and args, an empty stdin (a server that
// did start sees EOF and stops) and a 20 s limit.
func Run(t testing.TB, bin string, env []string, args ...string) Ran {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running %s: %v", filepath.Base(bin), err)
		}
		code = ee.ExitCode()
	}
	return Ran{code, so.String(), se.String()}
}

// WantFatal requires a refusal to start: a non-zero exit, nothing on
// stdout, and exactly one stderr line that starts "fatal:" and contains
// each of words.
func WantFatal(t testing.TB, r Ran, words ...string) {
	t.Helper()
	if r.Code == 0 {
		t.Fatalf("the server started (exit 0); stderr %q", r.Stderr)
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "fatal:") {
		t.Fatalf("stderr is not a single fatal: line: %q", r.Stderr)
	}
	for _, w := range words {
		if !strings.Contains(lines[0], w) {
			t.Fatalf("fatal line %q does not mention %q", lines[0], w)
		}
	}
	if r.Stdout != "" {
		t.Fatalf("stdout is not empty: %q", r.Stdout)
	}
}

// StartInProcess connects mcp-go's in-process client to s and initializes
// it; the client is closed at cleanup.
func StartInProcess(t testing.TB, s *server.MCPServer) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	Initialize(t, c)
	return c
}

// StartStdio starts bin with exactly env and args as an MCP stdio server
// and initializes a client on it; the client is closed (and the process
// waited for) at cleanup. The returned command lets a test kill the
// process. The server must name itself after its binary.
func StartStdio(t testing.TB, bin string, env []string, args ...string) (*client.Client, *exec.Cmd) {
	t.Helper()
	var cmd *exec.Cmd
	tr := transport.NewStdioWithOptions(bin, env, args, transport.WithCommandFunc(
		func(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd = exec.Command(command, args...)
			cmd.Env = env
			return cmd, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("starting %s: %v", filepath.Base(bin), err)
	}
	t.Cleanup(func() { c.Close() })
	if ir := Initialize(t, c); ir.ServerInfo.Name != filepath.Base(bin) {
		t.Fatalf("server calls itself %q, want %q", ir.ServerInfo.Name, filepath.Base(bin))
	}
	return c, cmd
}

// Initialize sends initialize with ProtocolVersion, as a real client does,
// and requires the server to accept that version.
func Initialize(t testing.TB, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = ProtocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "mcpkittest", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != ProtocolVersion {
		t.Fatalf("negotiated %q, want %s", res.ProtocolVersion, ProtocolVersion)
	}
	return res
}

// Result is a tool's OperationResult as a client sees it.
type Result struct {
	OK     bool            `json:"ok"`
	Code   string          `json:"code"`
	Action string          `json:"action"`
	Reason string          `json:"reason"`
	Detail json.RawMessage `json:"detail"`

	IsError    bool            `json:"-"` // the CallToolResult's isError
	Text       string          `json:"-"` // the one text content
	Structured json.RawMessage `json:"-"` // the structured content
	// Links are the resource_link items after the text content (empty,
	// never nil, when there are none).
	Links []mcp.ResourceLink `json:"-"`
}

// DecodeDetail decodes the result's detail into v.
func (r Result) DecodeDetail(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Detail, v); err != nil {
		t.Fatalf("%s detail: %v\n%s", r.Action, err, r.Detail)
	}
}

// Call calls a tool with args (anything that marshals to JSON) and returns
// its result, checked by Parse. A protocol error fails the test: every
// tool must answer with an OperationResult.
func Call(t testing.TB, c *client.Client, name string, args any) Result {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("CallTool %s: protocol error %v (every tool must answer with an OperationResult)", name, err)
	}
	return Parse(t, res)
}

// Parse decodes a tool result and requires it to be well formed: exactly
// one text content, first, holding the OperationResult JSON, then only
// resource_link items (at most MaxResourceLinks, each at a valid
// file-context:// URI, named, described HIGH_RISK, never twice), structured
// content with the same value as the text, and isError set exactly when ok
// is false.
func Parse(t testing.TB, res *mcp.CallToolResult) Result {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("want exactly one text content, got none")
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("content[0] is %T, want text", res.Content[0])
	}
	links := parseLinks(t, res.Content[1:])
	var r Result
	if err := json.Unmarshal([]byte(tc.Text), &r); err != nil {
		t.Fatalf("text content is not an OperationResult: %v\n%s", err, tc.Text)
	}
	if res.StructuredContent == nil {
		t.Fatalf("result has no structured content: %s", tc.Text)
	}
	sb, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromText, fromStructured any
	if json.Unmarshal([]byte(tc.Text), &fromText) != nil || json.Unmarshal(sb, &fromStructured) != nil ||
		!reflect.DeepEqual(fromText, fromStructured) {
		t.Fatalf("text and structured content disagree:\n%s\n%s", tc.Text, sb)
	}
	if res.IsError == r.OK {
		t.Fatalf("isError=%v with ok=%v: %s", res.IsError, r.OK, tc.Text)
	}
	r.IsError, r.Text, r.Structured, r.Links = res.IsError, tc.Text, sb, links
	return r
}

// MaxResourceLinks is mcpkit.MaxResourceLinks (this package cannot import
// mcpkit; mcpkit's TestMaxResourceLinksAgree checks they agree).
const MaxResourceLinks = 10

// parseLinks checks the items after the text content: resource_link items
// only, each at a valid file-context:// URI, named, described HIGH_RISK,
// never twice, at most MaxResourceLinks.
func parseLinks(t testing.TB, items []mcp.Content) []mcp.ResourceLink {
	t.Helper()
	if len(items) > MaxResourceLinks {
		t.Fatalf("%d resource links, want at most %d", len(items), MaxResourceLinks)
	}
	links := []mcp.ResourceLink{}
	seen := map[string]bool{}
	for i, c := range items {
		l, ok := c.(mcp.ResourceLink)
		if !ok {
			t.Fatalf("content[%d] is %T: after the one text content only resource_link items may follow", i+1, c)
		}
		p, ok := risk.PathOfURI(l.URI)
		switch {
		case l.Type != mcp.ContentTypeLink:
			t.Fatalf("content[%d] has type %q, want resource_link", i+1, l.Type)
		case !ok:
			t.Fatalf("content[%d] links %q: not a valid file-context URI", i+1, l.URI)
		case l.Name != p:
			t.Fatalf("content[%d] is named %q, want its path %q", i+1, l.Name, p)
		case !strings.HasPrefix(l.Description, "HIGH_RISK"):
			t.Fatalf("content[%d] description %q does not give the importance HIGH_RISK", i+1, l.Description)
		case seen[l.URI]:
			t.Fatalf("content[%d] links %q twice", i+1, l.URI)
		}
		seen[l.URI] = true
		links = append(links, l)
	}
	return links
}

// ToolNames lists the tools the client sees, sorted.
func ToolNames(t testing.TB, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// ToolsListJSON returns tools/list exactly as s puts it on the wire,
// normalised for a golden file: keys sorted, indented, tools by name, a
// final newline.
func ToolsListJSON(t testing.TB, s *server.MCPServer) []byte {
	t.Helper()
	resp := s.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatalf("tools/list cannot be marshalled: %v", err)
	}
	var env struct {
		Result *struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Result == nil {
		t.Fatalf("tools/list: %v %s", err, raw)
	}
	sort.Slice(env.Result.Tools, func(i, j int) bool {
		return fmt.Sprint(env.Result.Tools[i]["name"]) < fmt.Sprint(env.Result.Tools[j]["name"])
	})
	out, err := json.MarshalIndent(map[string]any{"tools": env.Result.Tools}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// Tools decodes the tools of a ToolsListJSON answer.
func Tools(t testing.TB, toolsJSON []byte) []map[string]any {
	t.Helper()
	var v struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(toolsJSON, &v); err != nil {
		t.Fatalf("tools/list JSON: %v", err)
	}
	return v.Tools
}

// Hints are a tool's four annotations.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// CheckAnnotations requires every tool of a ToolsListJSON answer to set
// all four annotations explicitly (mcp-go's defaults must never stand in
// for a declaration) and returns them by tool name.
func CheckAnnotations(t testing.TB, toolsJSON []byte) map[string]Hints {
	t.Helper()
	out := map[string]Hints{}
	for _, tool := range Tools(t, toolsJSON) {
		name, _ := tool["name"].(string)
		ann, ok := tool["annotations"].(map[string]any)
		if !ok {
			t.Fatalf("%s: no annotations", name)
		}
		get := func(k string) bool {
			v, ok := ann[k].(bool)
			if !ok {
				t.Fatalf("%s: annotation %s is not set explicitly: %v", name, k, ann)
			}
			return v
		}
		out[name] = Hints{get("readOnlyHint"), get("destructiveHint"), get("idempotentHint"), get("openWorldHint")}
	}
	return out
}

// update is the one -update flag of every package whose tests use Golden:
// go test ./some/package -run TestX -update rewrites the golden files that
// TestX compares.
var update = flag.Bool("update", false, "rewrite the golden files the tests compare (mcpkittest.Golden)")

// Golden compares got with the golden file at path; with -update it first
// rewrites the file. A difference fails the test and shows a line diff of
// the golden file (-) against got (+), not the whole file.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the test produced (review the change, then rerun with -update):\n%s",
			path, Diff(string(want), string(got)))
	}
}

// CallCancelled calls the tool name of s directly, with a context already
// cancelled (a client that gave up), and returns its result.
func CallCancelled(t testing.TB, s *server.MCPServer, name string, args map[string]any) Result {
	t.Helper()
	tool := s.GetTool(name)
	if tool == nil {
		t.Fatalf("the server does not serve %s", name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := tool.Handler(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return Parse(t, res)
}

// FolderThreeWays checks that the server bin takes its main folder each way
// every server takes it: --root DIR, DIR as an argument, and the environment
// variable envName. Started with an existing folder it says it is ready
// (stderr has ready and logged+DIR); with a missing one it refuses naming
// it. env returns a fresh environment for each run; args go first.
func FolderThreeWays(t *testing.T, bin string, env func(*testing.T) []string, args []string, envName, ready, logged string) {
	for _, way := range []string{"flag", "argument", "environment"} {
		t.Run(way, func(t *testing.T) {
			for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
				e, a := env(t), append([]string{}, args...)
				switch way {
				case "flag":
					a = append(a, "--root", dir)
				case "argument":
					a = append(a, dir)
				case "environment":
					e = append(e, envName+"="+dir)
				}
				r := Run(t, bin, e, a...)
				if strings.HasSuffix(dir, "missing") {
					WantFatal(t, r, dir)
					continue
				}
				if r.Code != 0 || !strings.Contains(r.Stderr, ready) || !strings.Contains(r.Stderr, logged+dir) {
					t.Fatalf("%s: code %d, stderr %q", way, r.Code, r.Stderr)
				}
			}
		})
	}
}

// ConfigError is one case of ConfigErrors: a policy Body whose error is
// placed at Line ("line 2") and mentions each of Want.
type ConfigError struct {
	Name, Body, Line string
	Want             []string
}

// ConfigErrors starts the server bin with each case's policy, written by
// write, and checks that it stops with one fatal line naming the file, the
// line and each wanted word, in TOML words: never a Go type or field.
func ConfigErrors(t *testing.T, bin string, env func(*testing.T) []string, write func(t *testing.T, body string) string, cases []ConfigError) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			pol := write(t, c.Body)
			r := Run(t, bin, env(t), "--config", pol, t.TempDir())
			WantFatal(t, r, append([]string{"policy file " + pol + ", " + c.Line + ":"}, c.Want...)...)
			if strings.Contains(r.Stderr, "struct field") || strings.Contains(r.Stderr, "config.") {
				t.Fatalf("speaks Go: %s", r.Stderr)
			}
		})
	}
}

// WritePolicy writes body as policy.toml in a new temporary directory and
// returns its path (a ConfigErrors write function).
func WritePolicy(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
