package organizer

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestPromptsGolden pins prompts/list and each prompt's text with its
// defaults, as the server answers them.
func TestPromptsGolden(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	mcpkittest.Golden(t, "testdata/prompts.json", mcpkittest.PromptsJSON(t, e.srv.MCP()))
}

// TestBundleManifestMatchesTheServer: the MCP bundle's manifest lists the
// tools and prompts this server really offers (make dist packs it).
func TestBundleManifestMatchesTheServer(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	mcpkittest.CheckManifest(t, "../../../packaging/organizerd/manifest.json", e.srv.MCP(), Prompts())
}
