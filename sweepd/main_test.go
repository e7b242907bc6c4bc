package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// bin is the sweepd binary built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sweepd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "sweepd")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sweepd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is an environment with nothing inherited that could configure
// sweepd: no policy file, no root or audit overrides.
func cleanEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state")}
}

type ran struct {
	code           int
	stdout, stderr string
}

func runBin(t *testing.T, env []string, args ...string) ran {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("") // a server that did start sees EOF and stops
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running sweepd: %v", err)
		}
		code = ee.ExitCode()
	}
	return ran{code, so.String(), se.String()}
}

// wantFatal requires a non-zero exit and exactly one stderr line, starting
// "fatal:" and containing each of words.
func wantFatal(t *testing.T, r ran, words ...string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("sweepd started (exit 0); stderr %q", r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "fatal:") {
		t.Fatalf("stderr is not a single fatal: line: %q", r.stderr)
	}
	for _, w := range words {
		if !strings.Contains(lines[0], w) {
			t.Fatalf("fatal line %q does not mention %q", lines[0], w)
		}
	}
	if r.stdout != "" {
		t.Fatalf("stdout is not empty: %q", r.stdout)
	}
}

func TestBinaryRefusesToStartWithoutRoot(t *testing.T) {
	wantFatal(t, runBin(t, cleanEnv(t)), "root")
	// An empty policy file names no root either.
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte("[sweep]\nroots = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantFatal(t, runBin(t, cleanEnv(t), "--config", pol), "root")
}

func TestBinaryRefusesToStartWithSymlinkedRoot(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	wantFatal(t, runBin(t, cleanEnv(t), "--root", link), "symbolic link")
	// Also with a trailing slash, and when only one of several roots is a link.
	wantFatal(t, runBin(t, cleanEnv(t), "--root", link+"/"))
	wantFatal(t, runBin(t, cleanEnv(t), "--root", real, "--root", link))
}

func TestBinaryRefusesToStartWithMissingRoot(t *testing.T) {
	wantFatal(t, runBin(t, cleanEnv(t), "--root", filepath.Join(t.TempDir(), "missing")), "root")
}

func TestBinaryRefusesToStartWithFileRoot(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantFatal(t, runBin(t, cleanEnv(t), "--root", f), "root")
}

func TestBinaryRefusesAuditLogInsideRoot(t *testing.T) {
	root := t.TempDir()
	env := cleanEnv(t)
	env = append(env, "XDG_STATE_HOME="+filepath.Join(root, "state"))
	wantFatal(t, runBin(t, env, "--root", root), "audit")
}

func TestBinaryVersion(t *testing.T) {
	r := runBin(t, cleanEnv(t), "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sweepd ") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, cleanEnv(t), "--help")
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, "--root") {
		t.Fatalf("--help: exit %d, %q", r.code, r.stderr)
	}
}

type toolResult struct {
	OK     bool            `json:"ok"`
	Code   string          `json:"code"`
	Reason string          `json:"reason"`
	Detail json.RawMessage `json:"detail"`
}

func call(t *testing.T, c *client.Client, name string, args map[string]any) toolResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r toolResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok || !strings.Contains(tc.Text, `"code":"`+r.Code+`"`) {
		t.Fatalf("text content does not carry the result: %+v", res.Content)
	}
	return r
}

func TestBinaryOverStdio(t *testing.T) {
	root := t.TempDir()
	state := t.TempDir()
	proj := filepath.Join(root, "proj")
	nm := filepath.Join(proj, "node_modules")
	for name, content := range map[string]string{
		"package.json":                    "{}",
		"node_modules/left-pad/index.js":  "module.exports = 1",
		"node_modules/left-pad/README.md": "readme",
		"node_modules/.package-lock.json": "{}",
		"src/index.js":                    "require('left-pad')",
	} {
		p := filepath.Join(proj, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.NewStdioMCPClient(bin, []string{"XDG_STATE_HOME=" + state, "BASTION_POLICY_FILE=", "BASTION_SWEEP_ROOTS=", "BASTION_AUDIT_LOG=", "BASTION_AUDIT_FAIL_MODE="}, "--root", root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "sweepd-binary-test", Version: "1"}
	ir, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if ir.ServerInfo.Name != "sweepd" || ir.ProtocolVersion != "2025-06-18" {
		t.Fatalf("initialize: %+v", ir)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "list_targets,reclaim,scan" {
		t.Fatalf("tools: %v", names)
	}

	if r := call(t, c, "list_targets", nil); r.Code != "OK" {
		t.Fatalf("list_targets: %+v", r)
	}
	r := call(t, c, "scan", map[string]any{})
	if r.Code != "OK" {
		t.Fatalf("scan: %+v", r)
	}
	var scan struct {
		Finds []struct {
			ID, Path, Kind string
		} `json:"finds"`
	}
	if err := json.Unmarshal(r.Detail, &scan); err != nil {
		t.Fatal(err)
	}
	realNM, _ := filepath.EvalSymlinks(nm)
	if len(scan.Finds) != 1 || scan.Finds[0].Path != realNM || scan.Finds[0].Kind != "node_modules" {
		t.Fatalf("finds: %+v", scan.Finds)
	}
	id := scan.Finds[0].ID
	// Outside the root: refused.
	if r := call(t, c, "scan", map[string]any{"path": "/"}); r.Code != "PATH_ESCAPE" {
		t.Fatalf("scan /: %+v", r)
	}
	// Dry run, then the real thing.
	r = call(t, c, "reclaim", map[string]any{"ids": []string{id}})
	if r.Code != "OK" || !strings.Contains(string(r.Detail), `"dry_run":true`) {
		t.Fatalf("dry run: %+v", r)
	}
	if _, err := os.Stat(nm); err != nil {
		t.Fatal("the dry run deleted the directory")
	}
	r = call(t, c, "reclaim", map[string]any{"ids": []string{id}, "confirm": "delete"})
	if r.Code != "OK" || !strings.Contains(string(r.Detail), `"dry_run":false`) {
		t.Fatalf("reclaim: %+v", r)
	}
	if _, err := os.Lstat(nm); !os.IsNotExist(err) {
		t.Fatalf("node_modules survived: %v", err)
	}
	for _, keep := range []string{"package.json", "src/index.js"} {
		if _, err := os.Stat(filepath.Join(proj, keep)); err != nil {
			t.Fatalf("%s was touched: %v", keep, err)
		}
	}
	// The same id again: used.
	if r := call(t, c, "reclaim", map[string]any{"ids": []string{id}, "confirm": "delete"}); r.Code != "STALE" {
		t.Fatalf("reused id: %+v", r)
	}
	c.Close()

	// The audit log sits in the state directory and verifies.
	logPath := filepath.Join(state, "bastion", "sweepd.audit.jsonl")
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	if !bytes.Contains(b, []byte(`"kind":"intent"`)) || !bytes.Contains(b, []byte(`"kind":"outcome"`)) {
		t.Fatalf("audit log lacks intent/outcome:\n%s", b)
	}
	v := runBin(t, cleanEnv(t), "audit", "verify", logPath)
	if v.code != 0 || !strings.HasPrefix(v.stdout, "ok:") {
		t.Fatalf("audit verify: exit %d, %q %q", v.code, v.stdout, v.stderr)
	}
	// A tampered log is reported broken.
	tampered := bytes.Replace(b, []byte(`"kind":"intent"`), []byte(`"kind": "intent"`), 1)
	if err := os.WriteFile(logPath, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	v = runBin(t, cleanEnv(t), "audit", "verify", logPath)
	if v.code != 1 || !strings.Contains(v.stdout+v.stderr, "broken") {
		t.Fatalf("audit verify of a tampered log: exit %d, %q %q", v.code, v.stdout, v.stderr)
	}
}
