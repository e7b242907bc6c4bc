//go:build linux

package organize

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestPipelineUnprivileged runs the pipeline's tests again as an
// unprivileged user (uid 65534): real users are not root, and the journal,
// the audit log and the moves must work, and refuse, the same for them.
func TestPipelineUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestEveryFlowTakesItsStepsInTheSafeOrder|TestACallThatCannotAskNeverLetsTheAgentConfirm|"+
		"TestFileSwappedWhileThePersonIsAskedIsNotMoved|TestCheckMoveAppliesTheProtectionLayer)$")
}
