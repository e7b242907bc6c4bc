package organizer

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"sort"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
)

var update = flag.Bool("update", false, "rewrite testdata/tools_list.json")

func toolsListJSON(t *testing.T, s *Server) []byte {
	t.Helper()
	resp := s.MCP().HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	raw, _ := json.Marshal(resp)
	var env struct {
		Result struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	sort.Slice(env.Result.Tools, func(i, j int) bool {
		return env.Result.Tools[i]["name"].(string) < env.Result.Tools[j]["name"].(string)
	})
	out, _ := json.MarshalIndent(map[string]any{"tools": env.Result.Tools}, "", "  ")
	return append(out, '\n')
}

func TestToolsListGolden(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	got := toolsListJSON(t, e.srv)
	if *update {
		os.WriteFile("testdata/tools_list.json", got, 0o644)
	}
	want, err := os.ReadFile("testdata/tools_list.json")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("tools/list differs from testdata/tools_list.json (review, then -update):\n%s", got)
	}
}

func TestEveryToolDeclaresAllFourAnnotationsAndNoneDeletes(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	var v struct {
		Tools []struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	json.Unmarshal(toolsListJSON(t, e.srv), &v)
	if len(v.Tools) != 7 {
		t.Fatalf("%d tools, want 7 (six organizer tools and the radar's get_context_summary)", len(v.Tools))
	}
	readOnly := map[string]bool{"list_files": true, "plan_organize": true, "get_context_summary": true}
	for _, tl := range v.Tools {
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := tl.Annotations[k].(bool); !ok {
				t.Errorf("%s: %s not set", tl.Name, k)
			}
		}
		if tl.Annotations["readOnlyHint"] != readOnly[tl.Name] || tl.Annotations["destructiveHint"] != false || tl.Annotations["openWorldHint"] != false {
			t.Errorf("%s: annotations %v", tl.Name, tl.Annotations)
		}
		if readOnly[tl.Name] && tl.Annotations["idempotentHint"] != true {
			t.Errorf("%s: read-only tool not idempotent", tl.Name)
		}
	}
}
