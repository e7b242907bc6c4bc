package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/tools_list.json")

const goldenToolsList = "testdata/tools_list.json"

// wireToolsListJSON returns tools/list as the server puts it on the wire,
// normalised (keys sorted, indented, tools by name).
func wireToolsListJSON(t *testing.T, srv *Server) []byte {
	t.Helper()
	resp := srv.MCP().HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
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
		return env.Result.Tools[i]["name"].(string) < env.Result.Tools[j]["name"].(string)
	})
	out, err := json.MarshalIndent(map[string]any{"tools": env.Result.Tools}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func TestToolsListGolden(t *testing.T) {
	e := newEnv(t)
	got := wireToolsListJSON(t, e.srv)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenToolsList, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenToolsList)
	if err != nil {
		t.Fatalf("%v (run go test -run TestToolsListGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tools/list differs from %s (review, then rerun with -update):\n%s", goldenToolsList, got)
	}
	res, err := e.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "explain_command,run_command" {
		t.Fatalf("tools: %v (want exactly run_command and explain_command)", names)
	}
}

func TestEveryToolDeclaresAllFourAnnotations(t *testing.T) {
	e := newEnv(t)
	var v struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(wireToolsListJSON(t, e.srv), &v); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]bool{
		"run_command":     {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false},
		"explain_command": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
	}
	for _, tl := range v.Tools {
		name := tl["name"].(string)
		ann, _ := tl["annotations"].(map[string]any)
		for k, w := range want[name] {
			got, ok := ann[k].(bool)
			if !ok || got != w {
				t.Errorf("%s: %s = %v (declared %v), want %v", name, k, ann[k], ok, w)
			}
		}
		if schema, _ := tl["inputSchema"].(map[string]any); schema["additionalProperties"] != false {
			t.Errorf("%s: input schema allows unknown arguments", name)
		}
	}
}

func TestUnknownArgumentIsRefusedAndRunsNothing(t *testing.T) {
	e := newEnv(t)
	r := e.call(t, "run_command", map[string]any{"command": "touch x", "shell": true})
	wantNothingRan(t, r, "INVALID_REQUEST")
	r = e.call(t, "run_command", map[string]any{"Command": "touch x"})
	wantNothingRan(t, r, "INVALID_REQUEST")
	if exists(e.jail + "/x") {
		t.Fatal("ran")
	}
}

func TestExplainShowsRadarViewOfPathArguments(t *testing.T) {
	e := newEnv(t)
	write(t, e.jail+"/.env", "API_KEY=x\n")
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
