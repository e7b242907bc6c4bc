// Package runnertest is the one test fixture for the run pipeline: a fresh
// jail, a real audit log, a state directory outside the jail and a policy
// file's terminal runtime. safety/runner's own tests and terminald's tests
// build on it, so the fixture exists once.
package runnertest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// Env is a fresh jail (Root, opened at Jail) with a real terminald audit
// log under State, and the terminal runtime of a policy file. Everything is
// closed when the test ends.
type Env struct {
	Jail      string // the jail directory, symbolic links resolved
	State     string // a state directory outside the jail
	AuditDir  string // State/audit
	AuditPath string // the audit log file in AuditDir
	Root      *jail.Root
	Audit     *audit.Log
	// Runtime is the policy file's command policy with Landlock required
	// (best effort off Linux), a 20-second timeout and a state directory
	// State/terminald that exists.
	Runtime config.TerminalRuntime
}

// New builds an Env under the policy file at policyFile.
func New(t testing.TB, policyFile string) *Env {
	t.Helper()
	e := &Env{Jail: Canon(t, t.TempDir()), State: Canon(t, t.TempDir())}
	root, err := jail.OpenRoot(e.Jail)
	if err != nil {
		t.Fatalf("OpenRoot: %v", err)
	}
	t.Cleanup(func() { root.Close() })
	e.Root = root
	e.AuditDir = filepath.Join(e.State, "audit")
	e.AuditPath = filepath.Join(e.AuditDir, "terminald.audit.jsonl")
	alog, err := audit.Open(audit.Options{Path: e.AuditPath, Server: "terminald", Roots: []string{e.Jail}})
	if err != nil {
		t.Fatalf("audit.Open: %v", err)
	}
	t.Cleanup(func() { alog.Close() })
	e.Audit = alog
	pol, err := config.LoadFile(policyFile)
	if err != nil {
		t.Fatalf("loading %s: %v", policyFile, err)
	}
	e.Runtime = config.TerminalRuntime{Policy: pol.Terminal.CommandPolicy(), Landlock: LandlockMode(),
		StateDir: filepath.Join(e.State, "terminald"), Timeout: 20 * time.Second}
	if err := os.MkdirAll(e.Runtime.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return e
}

// AuditRecords reads the audit log's records.
func (e *Env) AuditRecords(t testing.TB) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(e.AuditPath)
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

// Canon returns p with its symbolic links resolved.
func Canon(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// LandlockMode is the sandbox mode tests run under: required on Linux,
// where the confinement is part of what they check; best effort elsewhere.
func LandlockMode() sandbox.Mode {
	if runtime.GOOS == "linux" {
		return sandbox.ModeRequired
	}
	return sandbox.ModeBestEffort
}
