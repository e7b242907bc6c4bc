package organize

import (
	"errors"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/result"
)

// TestPlanIDRefusalKeepsCodeAndIdentity checks the plan wording of every
// id store refusal, expiry included, keeps the store's code and sentinel.
func TestPlanIDRefusalKeepsCodeAndIdentity(t *testing.T) {
	for _, c := range []struct {
		name string
		err  *result.Error
	}{
		{"malformed", ids.ErrMalformed},
		{"unknown", ids.ErrUnknown},
		{"used", ids.ErrUsed},
		{"expired", ids.ErrExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := planIDRefusal(c.err)
			code, reason := result.Classify(err)
			if code != c.err.Code || !errors.Is(err, c.err) {
				t.Fatalf("%v: code %s, errors.Is %v; want %s and true", c.err, code, errors.Is(err, c.err), c.err.Code)
			}
			if !strings.Contains(reason, "plan_organize") || strings.Contains(reason, "scan") {
				t.Fatalf("reason %q does not point to plan_organize", reason)
			}
		})
	}
}

// TestPartialOutcomeNamesTheToolThatTakesItBack covers the answers for an
// action that moved only some files, which a test cannot provoke reliably.
func TestPartialOutcomeNamesTheToolThatTakesItBack(t *testing.T) {
	for _, c := range []struct {
		action string
		want   string
	}{
		{"apply_plan", "undo_last_action"},
		{"move_file", "undo_last_action"},
		{"redo_last_action", "undo_last_action"},
		{"undo_last_action", "redo_last_action"},
	} {
		t.Run(c.action, func(t *testing.T) {
			for _, partial := range []bool{false, true} {
				if got := nextStep(c.action, partial); !strings.HasPrefix(got, c.want+" ") {
					t.Fatalf("nextStep(%s, partial=%v) = %q, want it to start with %s", c.action, partial, got, c.want)
				}
			}
		})
	}
}
