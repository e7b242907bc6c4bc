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

// bin is the terminald binary built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "terminald-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "terminald")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building terminald:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const shippedPolicy = "../policies/policy.toml"
const examplePolicy = "../policies/policy.example.toml"

// cleanEnv has nothing inherited that could configure terminald.
func cleanEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state")}, extra...)
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
	cmd.Stdin = strings.NewReader("")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running terminald: %v", err)
		}
		code = ee.ExitCode()
	}
	return ran{code, so.String(), se.String()}
}

func wantFatal(t *testing.T, r ran, words ...string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("terminald started (exit 0); stderr %q", r.stderr)
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

// policy writes a policy file with the given [terminal] body (after
// jail_root) and returns its path.
func policy(t testing.TB, jail, body string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.toml")
	doc := fmt.Sprintf("audit_log = %q\n[terminal]\njail_root = %q\n%s", filepath.Join(dir, "state", "audit.jsonl"), jail, body)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const allow = "[terminal.allowlist]\ncommands = [\"echo\", \"true\", \"ls\"]\n"

func TestBinaryRefusesToStartWithoutJailRoot(t *testing.T) {
	wantFatal(t, runBin(t, cleanEnv(t), "--config", shippedPolicy), "no jail_root")
	wantFatal(t, runBin(t, cleanEnv(t)), "no jail_root")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_POLICY_FILE="+shippedPolicy)), "no jail_root")
}

func TestBinaryRefusesToStartWithSymlinkedJail(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, link, allow)), "symbolic link")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_JAIL_ROOT="+link), "--config", shippedPolicy), "symbolic link")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_JAIL_ROOT="+filepath.Join(real, "missing")), "--config", shippedPolicy), "jail_root")
}

func TestBinaryRefusesBogusLandlockMode(t *testing.T) {
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "[terminal.sandbox]\nlandlock = \"bogus\"\n"+allow)), "landlock")
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "[terminal.sandbox]\nnetwork = \"maybe\"\n"+allow)), "network")
}

func TestBinaryRefusesInvalidCommandPolicy(t *testing.T) {
	r := runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(),
		"[terminal.allowlist]\ncommands = [\"sh\", \"ls\"]\n[[terminal.rules]]\ncommand = \"ls\"\ndeny_args = [\"-R\"]\n"))
	wantFatal(t, r, "sh", "reason")
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "")), "allowlist")
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, t.TempDir(), "[terminal.limits]\ntimeout_seconds = 99999\n"+allow)), "timeout_seconds")
}

func TestBinaryRefusesStateInsideJail(t *testing.T) {
	jail := t.TempDir()
	wantFatal(t, runBin(t, cleanEnv(t), "--config", policy(t, jail, "[terminal.state]\ndir = "+fmt.Sprintf("%q", filepath.Join(jail, "state"))+"\n"+allow)), "inside")
	wantFatal(t, runBin(t, cleanEnv(t, "BASTION_AUDIT_LOG="+filepath.Join(jail, "audit.jsonl")), "--config", policy(t, jail, allow)), "audit")
}

func TestBinaryVersionAndHelp(t *testing.T) {
	r := runBin(t, cleanEnv(t), "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "terminald ") {
		t.Fatalf("%+v", r)
	}
	r = runBin(t, cleanEnv(t), "--help")
	if r.code != 0 || !strings.Contains(r.stderr, "jail") || !strings.Contains(r.stderr, "-http") {
		t.Fatalf("%+v", r)
	}
}

type toolResult struct {
	OK     bool           `json:"ok"`
	Code   string         `json:"code"`
	Reason string         `json:"reason"`
	Detail map[string]any `json:"detail"`
}

func call(t testing.TB, c *client.Client, name string, args map[string]any) toolResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out toolResult
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// startStdio starts the binary as an MCP stdio server on jail.
func startStdio(t testing.TB, pol string) *client.Client {
	t.Helper()
	state := t.TempDir()
	c, err := client.NewStdioMCPClient(bin, []string{"XDG_STATE_HOME=" + state, "BASTION_POLICY_FILE=", "BASTION_JAIL_ROOT=",
		"BASTION_AUDIT_LOG=", "BASTION_AUDIT_FAIL_MODE="}, "--config", pol, "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "terminald-binary-test", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func TestBinaryOverStdio(t *testing.T) {
	jail := t.TempDir()
	pol := policy(t, jail, allow)
	c := startStdio(t, pol)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "explain_command,run_command" {
		t.Fatalf("tools %v", names)
	}
	r := call(t, c, "run_command", map[string]any{"command": "echo hi"})
	if !r.OK || r.Code != "OK" || r.Detail["stdout"] != "hi\n" || r.Detail["exit_code"] != float64(0) {
		t.Fatalf("run_command: %+v", r)
	}
	if conf, _ := r.Detail["confinement"].(string); !strings.HasPrefix(conf, "landlock-abi") {
		t.Fatalf("confinement %q", conf)
	}
	r = call(t, c, "explain_command", map[string]any{"command": "echo hi"})
	if r.Code != "OK" || r.Detail["decision"] != "allow" || r.Detail["executable"] == "" {
		t.Fatalf("explain_command: %+v", r)
	}
	r = call(t, c, "run_command", map[string]any{"command": "rm -rf /"})
	if r.OK || r.Code != "POLICY_DENIED" || len(r.Detail) != 0 {
		t.Fatalf("rm: %+v", r)
	}
	c.Close()
	// The audit log the server wrote verifies.
	logPath := filepath.Join(filepath.Dir(pol), "state", "audit.terminald.jsonl")
	v := runBin(t, cleanEnv(t), "audit", "verify", logPath)
	if v.code != 0 {
		t.Fatalf("audit verify: %+v", v)
	}
	b, _ := os.ReadFile(logPath)
	for _, w := range []string{`"kind":"intent"`, `"kind":"outcome"`, `"echo"`, "landlock-abi"} {
		if !bytes.Contains(b, []byte(w)) {
			t.Fatalf("audit log lacks %s", w)
		}
	}
}

// BenchmarkRunTrueOverStdio measures the round trip of run_command("true")
// through the built binary over stdio (policy, audit intent and outcome
// with fsync on a real disk, Landlock, redaction) against a direct
// fork/exec of /bin/true in the same run, and reports p50/p99 of both and
// the p50 overhead.
func BenchmarkRunTrueOverStdio(b *testing.B) {
	pol := policy(b, b.TempDir(), allow)
	c := startStdio(b, pol)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 200)
	served := make([]time.Duration, 0, n)
	direct := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		r := call(b, c, "run_command", map[string]any{"command": "true"})
		served = append(served, time.Since(t0))
		if r.Code != "OK" {
			b.Fatalf("run_command(true): %+v", r)
		}
		t0 = time.Now()
		if err := exec.Command(truePath).Run(); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
	}
	sp50, sp99, dp50, dp99 := pct(served, 0.5), pct(served, 0.99), pct(direct, 0.5), pct(direct, 0.99)
	b.ReportMetric(sp50, "stdio-p50-ms")
	b.ReportMetric(sp99, "stdio-p99-ms")
	b.ReportMetric(dp50, "exec-p50-ms")
	b.ReportMetric(dp99, "exec-p99-ms")
	b.ReportMetric(sp50-dp50, "overhead-p50-ms")
	b.Logf("run_command(true) over stdio: p50 %.2f ms, p99 %.2f ms; fork/exec /bin/true: p50 %.2f ms, p99 %.2f ms; p50 overhead %.2f ms (goal < 3 ms), %d samples",
		sp50, sp99, dp50, dp99, sp50-dp50, n)
}
