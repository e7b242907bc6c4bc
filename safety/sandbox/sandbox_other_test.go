//go:build !linux

package sandbox

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestRequiredModeRefusesWithoutLandlock(t *testing.T) {
	if _, err := Check(ModeRequired); result.CodeOf(err) != result.PolicyDenied {
		t.Fatalf("Check(required) off Linux: %v, want POLICY_DENIED", err)
	}
	if desc, err := Check(ModeBestEffort); err != nil || desc != "none (best-effort: landlock unavailable)" {
		t.Fatalf("Check(best-effort) = %q, %v", desc, err)
	}
}
