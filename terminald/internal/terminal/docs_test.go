package terminal

import (
	"os"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestTerminaldDocListsEveryTool keeps the tools section of
// docs/terminald.md (one "### `tool(...)`" heading per tool) equal to the
// server's tools/list (the golden file, which TestToolsListGolden keeps
// equal to the server): a new tool needs its section.
func TestTerminaldDocListsEveryTool(t *testing.T) {
	golden, err := os.ReadFile(goldenToolsList)
	if err != nil {
		t.Fatal(err)
	}
	mcpkittest.CheckDocTools(t, golden, "../../../docs/terminald.md", "Tools")
}
