package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// bin is the sweepd binary built once by TestMain.
var bin string

func TestMain(m *testing.M) { mcpkittest.RunWithBinary(m, "sweepd", &bin) }

// cleanEnv is an environment with nothing inherited that could configure
// sweepd: no policy file, no root or audit overrides.
var cleanEnv = mcpkittest.CleanEnv

func runBin(t *testing.T, env []string, args ...string) mcpkittest.Ran {
	t.Helper()
	return mcpkittest.Run(t, bin, env, args...)
}

var wantFatal = mcpkittest.WantFatal

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

// TestBinaryRefusesBrokenRadarRuleFile: a [radar] rule file that does not
// parse refuses the start, in the shape every server gives it.
func TestBinaryRefusesBrokenRadarRuleFile(t *testing.T) {
	radar, ruleFile := mcpkittest.BrokenRadarRules(t)
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte(radar), 0o644); err != nil {
		t.Fatal(err)
	}
	mcpkittest.WantRadarRefusal(t, runBin(t, cleanEnv(t), "--config", pol, "--root", t.TempDir()), ruleFile)
}

func TestBinaryVersion(t *testing.T) {
	r := runBin(t, cleanEnv(t), "--version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "sweepd ") || strings.Count(r.Stdout, "\n") != 1 {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = runBin(t, cleanEnv(t), "--help")
	if r.Code != 0 || !strings.Contains(r.Stderr+r.Stdout, "--root") {
		t.Fatalf("--help: exit %d, %q", r.Code, r.Stderr)
	}
}

var call = mcpkittest.Call

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
	// This client cannot ask the person (no elicitation): the agent
	// confirms here, as [approval] reclaim = "agent" says.
	// TestBinaryDefaultPolicyAsksThePerson covers the shipped default.
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte("[approval]\nreclaim = \"agent\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := mcpkittest.StartStdio(t, bin, cleanEnv(t, "XDG_STATE_HOME="+state), "--config", pol, "--root", root)
	if names, want := mcpkittest.ToolNames(t, c), mcpkittest.GoldenToolNames(t, "internal/sweep/testdata/tools_list.json"); !slices.Equal(names, want) {
		t.Fatalf("tools: %v, want %v", names, want)
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
	if v.Code != 0 || !strings.HasPrefix(v.Stdout, "ok:") {
		t.Fatalf("audit verify: exit %d, %q %q", v.Code, v.Stdout, v.Stderr)
	}
	// A tampered log is reported broken.
	tampered := bytes.Replace(b, []byte(`"kind":"intent"`), []byte(`"kind": "intent"`), 1)
	if err := os.WriteFile(logPath, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	v = runBin(t, cleanEnv(t), "audit", "verify", logPath)
	if v.Code != 1 || !strings.Contains(v.Stdout+v.Stderr, "broken") {
		t.Fatalf("audit verify of a tampered log: exit %d, %q %q", v.Code, v.Stdout, v.Stderr)
	}
}

// TestBinaryDefaultPolicyAsksThePerson: without a policy file a confirmed
// reclaim is the person's to confirm; a client that cannot ask gets
// NEEDS_EXPLICIT_REQUEST naming the client feature and the policy key,
// nothing is deleted, and the id stays valid.
func TestBinaryDefaultPolicyAsksThePerson(t *testing.T) {
	root := t.TempDir()
	nm := filepath.Join(root, "proj", "node_modules")
	for name, content := range map[string]string{"package.json": "{}", "node_modules/.package-lock.json": "{}"} {
		p := filepath.Join(root, "proj", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := mcpkittest.StartStdio(t, bin, cleanEnv(t, "XDG_STATE_HOME="+t.TempDir()), "--root", root)
	var scan struct {
		Finds []struct{ ID string } `json:"finds"`
	}
	if r := call(t, c, "scan", map[string]any{}); r.Code != "OK" || json.Unmarshal(r.Detail, &scan) != nil || len(scan.Finds) != 1 {
		t.Fatalf("scan: %+v", r)
	}
	ids := []string{scan.Finds[0].ID}
	r := call(t, c, "reclaim", map[string]any{"ids": ids, "confirm": "delete"})
	if r.Code != "NEEDS_EXPLICIT_REQUEST" || !strings.Contains(r.Reason, "elicitation") || !strings.Contains(r.Reason, `reclaim = "agent"`) ||
		!strings.Contains(string(r.Detail), `"approval":{"asked":false,"key":"approval.reclaim"}`) {
		t.Fatalf("confirmed reclaim without a way to ask the person: %+v", r)
	}
	if _, err := os.Stat(nm); err != nil {
		t.Fatalf("deleted without the person: %v", err)
	}
	if r := call(t, c, "reclaim", map[string]any{"ids": ids}); r.Code != "OK" {
		t.Fatalf("the id was used up by the refused call: %+v", r)
	}
}
