package sweep

import (
	_ "embed"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
)

// ScanViewURI is the MCP Apps view of scan's answer.
const ScanViewURI = "ui://sweepd/scan"

//go:embed view/scan.html
var scanHTML []byte

// ScanView is scan's MCP Apps view: the finds as a treemap (area = size,
// grouped by root, project and kind) beside a sortable list, kept finds and
// finds with HIGH_RISK files inside marked, the totals, and a dry run and a
// delete of the selected finds through the client. The delete is reclaim
// with confirm "delete": the server still asks the person (elicitation)
// as [approval] reclaim says; the view cannot answer for them.
func ScanView() mcpkit.View {
	return mcpkit.View{URI: ScanViewURI, Name: "sweepd scan view",
		Description: "The scan's finds as a treemap and a sortable list; select finds for a dry run or a reclaim, which the server confirms with the person.",
		HTML:        scanHTML, Tools: []string{"scan"}}
}
