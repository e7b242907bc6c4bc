package organizer

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
)

// The plan view, as served, loads nothing from outside (no URL of any
// kind; its csp names no origin) and never turns data into markup or code;
// it stays small.
func TestPlanViewLoadsNothingFromOutsideAndWritesNoMarkup(t *testing.T) {
	doc := mcpkit.ViewDocument(PlanView())
	if got := mcpkit.OutsideReferences(doc); len(got) != 0 {
		t.Fatalf("outside references in the plan view: %q", got)
	}
	if got := mcpkit.MarkupSinks(doc); len(got) != 0 {
		t.Fatalf("markup sinks in the plan view: %q", got)
	}
	if len(doc) > 100<<10 {
		t.Fatalf("plan view is %d bytes; the budget for all views of a binary is 300 KB", len(doc))
	}
}
