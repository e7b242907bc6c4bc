package terminal

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/runner"
	"github.com/bastion-mcp/bastion/safety/runner/runnertest"
)

const examplePolicy = "../../../policies/policy.example.toml"

// env is one terminald server on a fresh jail with a real audit log, a
// state directory outside the jail, and an in-process MCP client.
type env struct {
	*runnertest.Env
	srv *Server
	c   *client.Client
}

type envOpt func(*Options)

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	e := &env{Env: runnertest.New(t, examplePolicy)}
	radar, err := risk.NewEngine(risk.Options{ScanBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Options: runner.Options{TerminalRuntime: e.Runtime, Root: e.Root, Audit: e.Audit},
		Radar: radar, Version: "test"}
	for _, f := range opts {
		f(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.srv = srv
	t.Cleanup(srv.Close)
	e.c = mcpkittest.StartInProcess(t, srv.MCP())
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

func commandLoadSection(b []byte) (command.Policy, error) { return command.LoadSection(b) }
func configLoadFile(p string) (*config.Policy, error)     { return config.LoadFile(p) }

func equalPolicy(a, b command.Policy) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
