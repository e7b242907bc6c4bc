package organizer

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// TestContextSummaryLowersAsTheDescriptorDoes: with a radar that reads
// content, organizerd's get_context_summary gives each file HIGH_RISK by
// name the verdict of its file-context descriptor: a .env.local of
// placeholders counts as NORMAL and is not listed, a .env with one
// real-looking secret stays HIGH_RISK.
func TestContextSummaryLowersAsTheDescriptorDoes(t *testing.T) {
	eng, err := risk.NewEngine(risk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, config.Organizer{}, func(o *Options) { o.Radar = &organize.Radar{Engine: eng, Root: o.Radar.Root} })
	mcpkittest.WantSummaryLowersAsDescriptors(t, e.c, func(rel, content string) { e.put(rel, content) })
}
