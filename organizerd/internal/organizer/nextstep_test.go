package organizer

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/ids"
)

// TestEachReasonNamesTheRightNextStep drives every answer whose reason
// names a next step and checks it names the tool that really takes it.
func TestEachReasonNamesTheRightNextStep(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.pdf", "a")
	e.put("b.jpg", "b")
	p := e.plan()
	steps := []struct {
		name      string
		tool      string
		args      map[string]any
		code      string
		want, not string
	}{
		{"apply names undo", "apply_plan", map[string]any{"plan_id": p.PlanID}, "OK", "undo_last_action reverts", "redo_last_action"},
		{"used plan says plan again", "apply_plan", map[string]any{"plan_id": p.PlanID}, "STALE", "plan again with plan_organize", "scan"},
		{"unknown plan says plan again", "apply_plan", map[string]any{"plan_id": ids.New("p")}, "NOT_FOUND", "plan again with plan_organize", "scan"},
		{"malformed plan names plan_organize", "apply_plan", map[string]any{"plan_id": "f-1"}, "INVALID_REQUEST", "come only from plan_organize", "scan"},
		{"undo names redo", "undo_last_action", nil, "OK", "redo_last_action moves them again", "undo_last_action"},
		{"redo names undo", "redo_last_action", nil, "OK", "undo_last_action reverts", "redo_last_action"},
		{"move names undo", "move_file", map[string]any{"src": "Images/b.jpg", "dest": "b.jpg"}, "OK", "undo_last_action reverts", "redo_last_action"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := e.call(s.tool, s.args)
			if r.Code != s.code {
				t.Fatalf("%s: %+v, want code %s", s.tool, r, s.code)
			}
			if !strings.Contains(r.Reason, s.want) || strings.Contains(r.Reason, s.not) {
				t.Fatalf("%s: reason %q: want it to name %q and not %q", s.tool, r.Reason, s.want, s.not)
			}
		})
	}
}
