package organizer

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
)

// The plan view, as served, loads nothing from outside (no URL of any
// kind; its csp names no origin) and never turns data into markup or code;
// it stays small.
func TestPlanViewLoadsNothingFromOutsideAndWritesNoMarkup(t *testing.T) {
	if got := mcpkit.ViewProblems(PlanView()); len(got) != 0 {
		t.Fatalf("the plan view: %q", got)
	}
}
