package organizer

import (
	_ "embed"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
)

// PlanViewURI is the MCP Apps view of plan_organize's answer.
const PlanViewURI = "ui://organizerd/plan"

//go:embed view/plan.html
var planHTML []byte

// PlanView is plan_organize's MCP Apps view: the workspace before and after
// the plan as trees with a count per destination folder, the skipped files
// and why, HIGH_RISK ones flagged, and apply and undo buttons that call
// apply_plan and undo_last_action through the client (approval as the
// policy says; the view cannot answer for the person).
func PlanView() mcpkit.View {
	return mcpkit.View{URI: PlanViewURI, Name: "organizerd plan view",
		Description: "The plan as a before and after tree with counts per folder and the skipped files; apply and undo through the client.",
		HTML:        planHTML, Tools: []string{"plan_organize"}}
}
