package sweep

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
)

// The scan view, as served, loads nothing from outside (no URL of any
// kind; its csp names no origin) and never turns data into markup or code;
// it stays small.
func TestScanViewLoadsNothingFromOutsideAndWritesNoMarkup(t *testing.T) {
	if got := mcpkit.ViewProblems(ScanView()); len(got) != 0 {
		t.Fatalf("the scan view: %q", got)
	}
}
