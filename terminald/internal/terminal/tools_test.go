package terminal

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

const goldenToolsList = "testdata/tools_list.json"

func TestToolsListGolden(t *testing.T) {
	e := newEnv(t)
	got := mcpkittest.ToolsListJSON(t, e.srv.MCP())
	mcpkittest.Golden(t, goldenToolsList, got)
	// The client sees the same tools.
	if names, want := mcpkittest.ToolNames(t, e.c), mcpkittest.ToolNamesIn(t, got); !slices.Equal(names, want) {
		t.Fatalf("tools: %v, want exactly %v", names, want)
	}
}

// Each tool's input schema describes exactly the struct its handler
// decodes the arguments into (names, types, required-ness).
func TestEveryToolSchemaMatchesItsArguments(t *testing.T) {
	e := newEnv(t)
	if err := mcpkit.CheckTools(e.srv.MCP()); err != nil {
		t.Fatal(err)
	}
}

func TestEveryToolDeclaresAllFourAnnotations(t *testing.T) {
	e := newEnv(t)
	toolsJSON := mcpkittest.ToolsListJSON(t, e.srv.MCP())
	hints := mcpkittest.CheckAnnotations(t, toolsJSON)
	want := map[string]mcpkittest.Hints{
		"run_command":     {Destructive: true},
		"explain_command": {ReadOnly: true, Idempotent: true},
		// The radar's overview, served by every server.
		"get_context_summary": {ReadOnly: true, Idempotent: true},
	}
	for name, w := range want {
		if hints[name] != w {
			t.Errorf("%s: annotations %+v, want %+v", name, hints[name], w)
		}
	}
	for _, tl := range mcpkittest.Tools(t, toolsJSON) {
		if schema, _ := tl["inputSchema"].(map[string]any); schema["additionalProperties"] != false {
			t.Errorf("%s: input schema allows unknown arguments", tl["name"])
		}
	}
}

func TestUnknownArgumentIsRefusedAndRunsNothing(t *testing.T) {
	e := newEnv(t)
	r := e.call(t, "run_command", map[string]any{"command": "touch x", "shell": true})
	wantNothingRan(t, r, "INVALID_REQUEST")
	r = e.call(t, "run_command", map[string]any{"Command": "touch x"})
	wantNothingRan(t, r, "INVALID_REQUEST")
	if testfs.Exists(e.Jail + "/x") {
		t.Fatal("ran")
	}
}

// TestExplainShowsGitFactsOfATrackedEnv: with the jail a git repository
// whose index tracks .env, explain_command's radar view of "cat .env"
// carries the git facts and suggests CONSULT_HISTORY (earlier versions of
// the file stay in the history), as the file's descriptor does.
func TestExplainShowsGitFactsOfATrackedEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // the radar reads the global excludes file named there
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	e := newEnv(t)
	testfs.Write(t, e.Jail+"/.env", "API_KEY=x\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", ".env"}} {
		c := exec.Command("git", args...)
		c.Dir = e.Jail
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	r := e.explain(t, "cat .env")
	paths, _ := r.Detail["paths"].([]any)
	if r.str("decision") != "allow" || len(paths) != 1 {
		t.Fatalf("%s", r.text)
	}
	md := paths[0].(map[string]any)["descriptor"].(map[string]any)["metadata"].(map[string]any)
	git, _ := md["git"].(map[string]any)
	if md["importance"] != "HIGH_RISK" || md["suggestedAction"] != "CONSULT_HISTORY" || git["tracked"] != true {
		t.Fatalf("radar view of a tracked .env: %v", md)
	}
}

func TestExplainShowsRadarViewOfPathArguments(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, e.Jail+"/.env", "API_KEY=x\n")
	r := e.explain(t, "cat .env")
	paths, _ := r.Detail["paths"].([]any)
	if r.str("decision") != "allow" || len(paths) != 1 {
		t.Fatalf("%s", r.text)
	}
	p := paths[0].(map[string]any)
	md := p["descriptor"].(map[string]any)["metadata"].(map[string]any)
	if p["path"] != ".env" || md["importance"] != "HIGH_RISK" || md["suggestedAction"] != "READ_ONLY" {
		t.Fatalf("radar view: %v", p)
	}
	// A denied command is still explained, with the deciding rule.
	r = e.explain(t, "find . -exec rm {} +")
	if r.Code != "OK" || r.str("decision") != "deny" || r.str("code") != "POLICY_DENIED" || r.str("rule") == "" || r.str("reason") == "" {
		t.Fatalf("%s", r.text)
	}
	r = e.explain(t, "ls ../outside")
	paths, _ = r.Detail["paths"].([]any)
	if len(paths) != 1 || paths[0].(map[string]any)["refused"] == "" {
		t.Fatalf("an escaping path argument is not flagged: %s", r.text)
	}
}
