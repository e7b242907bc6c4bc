package organizer

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

func toolsListJSON(t *testing.T, s *Server) []byte {
	t.Helper()
	return mcpkittest.ToolsListJSON(t, s.MCP())
}

func TestToolsListGolden(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	mcpkittest.Golden(t, "testdata/tools_list.json", toolsListJSON(t, e.srv))
}

// Each tool's input schema describes exactly the struct its handler
// decodes the arguments into (names, types, required-ness).
func TestEveryToolSchemaMatchesItsArguments(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	if err := mcpkit.CheckTools(e.srv.MCP()); err != nil {
		t.Fatal(err)
	}
}

func TestEveryToolDeclaresAllFourAnnotationsAndNoneDeletes(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	hints := mcpkittest.CheckAnnotations(t, toolsListJSON(t, e.srv))
	if want := len(e.srv.Tools()) + 1; len(hints) != want {
		t.Fatalf("%d tools, want %d (the organizer tools and the radar's get_context_summary)", len(hints), want)
	}
	readOnly := map[string]bool{"list_files": true, "plan_organize": true, "get_context_summary": true}
	for name, h := range hints {
		if h.ReadOnly != readOnly[name] || h.Destructive || h.OpenWorld {
			t.Errorf("%s: annotations %+v", name, h)
		}
		if readOnly[name] && !h.Idempotent {
			t.Errorf("%s: read-only tool not idempotent", name)
		}
	}
}
