package organizer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// env is one organizerd with a real workspace, journal and audit log, and an
// in-process MCP client.
type env struct {
	auditDir string
	t        *testing.T
	ws       string
	outside  string
	srv      *Server
	c        *client.Client
	j        *journal.Journal
}

func newEnv(t *testing.T, o config.Organizer) *env {
	t.Helper()
	return newEnvWith(t, o, nil)
}

// newEnvWith is newEnv with the server's Options adjusted by set (the
// Asker and who confirms what).
func newEnvWith(t *testing.T, o config.Organizer, set func(*Options)) *env {
	t.Helper()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	state := t.TempDir()
	root, err := jail.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	rules, err := organize.New(o)
	if err != nil {
		t.Fatal(err)
	}
	auditDir := t.TempDir()
	alog, err := audit.Open(audit.Options{Path: filepath.Join(auditDir, "audit.jsonl"), Server: "organizerd", Roots: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	j, _, err := journal.Open(filepath.Join(state, "organizerd.journal"), root, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	eng, err := risk.NewEngine(risk.Options{ScanBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Version: "test", Options: organize.Options{Root: root, Rules: rules, Journal: j, Audit: alog, Radar: &organize.Radar{Engine: eng, Root: ws}}}
	if set != nil {
		set(&opts)
	}
	srv := New(opts)
	c := mcpkittest.StartInProcess(t, srv.MCP())
	return &env{t: t, ws: ws, outside: outside, srv: srv, c: c, j: j, auditDir: auditDir}
}

var old = time.Now().Add(-time.Hour)

// put writes a file modified an hour ago (so the "recent" restraint does not apply).
func (e *env) put(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.ws, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	os.Chtimes(p, old, old)
}

func (e *env) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.ws, rel))
	return err == nil
}

func (e *env) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(e.ws, rel))
	return string(b)
}

type opResult = mcpkittest.Result

func (e *env) call(name string, args map[string]any) opResult {
	e.t.Helper()
	return mcpkittest.Call(e.t, e.c, name, args)
}

type planOut struct {
	PlanID string `json:"plan_id"`
	Moves  []struct {
		Src, Dest, Category string
		Size                int64
	} `json:"moves"`
	MoveCount int `json:"move_count"`
	Skips     []struct {
		Name, Code, Reason, Rule, Layer string
	} `json:"skips"`
	SkipCount int  `json:"skip_count"`
	Truncated bool `json:"truncated"`
}

func (e *env) plan() planOut {
	e.t.Helper()
	r := e.call("plan_organize", nil)
	if r.Code != "OK" {
		e.t.Fatalf("plan: %+v", r)
	}
	var p planOut
	r.DecodeDetail(e.t, &p)
	return p
}

func (p planOut) skip(name string) (code, layer, rule string) {
	for _, s := range p.Skips {
		if s.Name == name {
			return s.Code, s.Layer, s.Rule
		}
	}
	return "", "", ""
}
