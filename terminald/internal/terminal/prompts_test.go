package terminal

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestPromptsAndBundleManifest pins prompts/list and each prompt's text with
// its defaults, and checks that the MCP bundle's manifest lists the tools and
// prompts this server really offers (make dist packs it).
func TestPromptsAndBundleManifest(t *testing.T) {
	mcpkittest.CheckPrompts(t, newEnv(t).srv.MCP(), "terminald", Prompts())
}
