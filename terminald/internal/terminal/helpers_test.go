package terminal

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/runner"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

const examplePolicy = "../../../policies/policy.example.toml"

// shippedPolicy is the command policy of the shipped example policy file.
func shippedPolicy(t testing.TB) command.Policy {
	t.Helper()
	p, err := config.LoadFile(examplePolicy)
	if err != nil {
		t.Fatalf("loading %s: %v", examplePolicy, err)
	}
	return p.Terminal.CommandPolicy()
}

func landlockMode() sandbox.Mode {
	if runtime.GOOS == "linux" {
		return sandbox.ModeRequired
	}
	return sandbox.ModeBestEffort
}

// env is one terminald server on a fresh jail with a real audit log, a
// state directory outside the jail, and an in-process MCP client.
type env struct {
	jail      string
	state     string
	auditDir  string
	auditPath string
	srv       *Server
	c         *client.Client
}

type envOpt func(*Options)

func canon(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	e := &env{jail: canon(t, t.TempDir()), state: canon(t, t.TempDir())}
	jr, err := jail.OpenRoot(e.jail)
	if err != nil {
		t.Fatalf("OpenRoot: %v", err)
	}
	t.Cleanup(func() { jr.Close() })
	e.auditDir = filepath.Join(e.state, "audit")
	e.auditPath = filepath.Join(e.auditDir, "terminald.audit.jsonl")
	alog, err := audit.Open(audit.Options{Path: e.auditPath, Server: "terminald", Roots: []string{e.jail}})
	if err != nil {
		t.Fatalf("audit.Open: %v", err)
	}
	t.Cleanup(func() { alog.Close() })
	radar, err := risk.NewEngine(risk.Options{ScanBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Options: runner.Options{TerminalRuntime: config.TerminalRuntime{Policy: shippedPolicy(t),
		Landlock: landlockMode(), StateDir: filepath.Join(e.state, "terminald"), Timeout: 20 * time.Second},
		Root: jr, Audit: alog}, Radar: radar, Version: "test"}
	for _, f := range opts {
		f(&o)
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.srv = srv
	t.Cleanup(srv.Close)
	c := mcpkittest.StartInProcess(t, srv.MCP())
	e.c = c
	return e
}

// res is a decoded OperationResult.
type res struct {
	OK     bool           `json:"ok"`
	Code   string         `json:"code"`
	Reason string         `json:"reason"`
	Detail map[string]any `json:"detail"`
	isErr  bool
	text   string
}

func (r res) str(k string) string { s, _ := r.Detail[k].(string); return s }

func (r res) exit() int {
	f, ok := r.Detail["exit_code"].(float64)
	if !ok {
		return -999
	}
	return int(f)
}

func (e *env) call(t testing.TB, tool string, args map[string]any) res {
	t.Helper()
	r := mcpkittest.Call(t, e.c, tool, args)
	out := res{OK: r.OK, Code: r.Code, Reason: r.Reason, isErr: r.IsError, text: r.Text}
	r.DecodeDetail(t, &out.Detail)
	return out
}

func (e *env) run(t testing.TB, line string) res {
	t.Helper()
	return e.call(t, "run_command", map[string]any{"command": line})
}

func (e *env) runIn(t testing.TB, line, cwd string) res {
	t.Helper()
	return e.call(t, "run_command", map[string]any{"command": line, "cwd": cwd})
}

func (e *env) explain(t testing.TB, line string) res {
	t.Helper()
	return e.call(t, "explain_command", map[string]any{"command": line})
}

func write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// wantNothingRan requires a refusal with the code and an empty detail.
func wantNothingRan(t testing.TB, r res, code string) {
	t.Helper()
	if r.Code != code || r.OK || !r.isErr {
		t.Fatalf("got %s ok=%v (%s), want %s", r.Code, r.OK, r.Reason, code)
	}
	if len(r.Detail) != 0 {
		t.Fatalf("detail is not empty for a command that did not run: %v", r.Detail)
	}
	if r.Reason == "" {
		t.Fatal("refusal without a reason")
	}
}

// auditRecords reads the audit log's records.
func (e *env) auditRecords(t testing.TB) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(e.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func commandLoadSection(b []byte) (command.Policy, error) { return command.LoadSection(b) }
func configLoadFile(p string) (*config.Policy, error)     { return config.LoadFile(p) }

func equalPolicy(a, b command.Policy) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
