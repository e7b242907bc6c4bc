package organizer

import (
	"os"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestOrganizerdDocListsEveryTool keeps the tool table of docs/organizerd.md
// equal to the server's tools/list (the golden file, which
// TestToolsListGolden keeps equal to the server): a new tool needs its row.
func TestOrganizerdDocListsEveryTool(t *testing.T) {
	golden, err := os.ReadFile("testdata/tools_list.json")
	if err != nil {
		t.Fatal(err)
	}
	mcpkittest.CheckDocTools(t, golden, "../../../docs/organizerd.md", "Tools")
}
