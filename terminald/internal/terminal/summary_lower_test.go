package terminal

import (
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestContextSummaryInTerminaldLowersAsTheDescriptorDoes: with a radar
// that reads content, terminald's get_context_summary gives each file
// HIGH_RISK by name the verdict of its file-context descriptor: a
// .env.local of placeholders counts as NORMAL and is not listed, a .env
// with one real-looking secret stays HIGH_RISK.
func TestContextSummaryInTerminaldLowersAsTheDescriptorDoes(t *testing.T) {
	eng, err := risk.NewEngine(risk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *Options) { o.Radar = eng })
	mcpkittest.WantSummaryLowersAsDescriptors(t, e.c, func(rel, content string) {
		testfs.Write(t, filepath.Join(e.Jail, filepath.FromSlash(rel)), content)
	})
}
