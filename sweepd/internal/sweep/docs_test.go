package sweep

import (
	"os"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestReadmeListsEveryTool keeps the tool table of README.md's sweepd
// section equal to the server's tools/list (the golden file, which
// TestToolsListGolden keeps equal to the server): a new tool needs its row.
// sweepd has no docs/sweepd.md; the README is its reference.
func TestReadmeListsEveryTool(t *testing.T) {
	golden, err := os.ReadFile(goldenToolsList)
	if err != nil {
		t.Fatal(err)
	}
	mcpkittest.CheckDocTools(t, golden, "../../../README.md", "sweepd", "Tools")
}
