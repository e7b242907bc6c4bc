//go:build linux

package organizer

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestToolsUnprivileged runs the tools' flow and attack tests again as an
// unprivileged user (uid 65534), through the same in-process MCP client:
// real users are not root.
func TestToolsUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestApplyPlanAsksThePersonInBothEras|TestFileChangedWhileAskingIsNotMoved|"+
		"TestUndoAndRedoAskAboutTheirMoves|TestUndoOfAnotherActionIsStale|TestEachReasonNamesTheRightNextStep|"+
		"TestMoveFileRefusesEscapesAbsoluteAndDotDot|TestMoveFileRefusesControlCharacterNamesAndSpecialFiles|"+
		"TestApplyIsStaleWhenFileSwappedForSymlinkAfterPlanning|TestUndoRefusesOccupiedOriginalAndChangedFileThenRedo|"+
		"TestRacingAdversarySwapsFilesForSymlinksDuringApply)$")
}
