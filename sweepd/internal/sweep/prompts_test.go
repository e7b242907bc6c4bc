package sweep

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestPromptsGolden pins prompts/list and each prompt's text with its
// defaults, as the server answers them.
func TestPromptsGolden(t *testing.T) {
	e := newEnv(t)
	mcpkittest.Golden(t, "testdata/prompts.json", mcpkittest.PromptsJSON(t, e.srv.MCP()))
}

// TestBundleManifestMatchesTheServer: the MCP bundle's manifest lists the
// tools and prompts this server really offers (make dist packs it).
func TestBundleManifestMatchesTheServer(t *testing.T) {
	e := newEnv(t)
	mcpkittest.CheckManifest(t, "../../../packaging/sweepd/manifest.json", e.srv.MCP(), Prompts())
}
