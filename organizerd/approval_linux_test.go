//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBinaryTakesWhoConfirmsFromThePolicy: organizerd builds its Asker
// from [approval]. Under apply_plan = "human", a client without elicitation
// (fallback refuse) gets NEEDS_EXPLICIT_REQUEST and nothing moves; under
// the default the agent's call confirms, and the result says so.
func TestBinaryTakesWhoConfirmsFromThePolicy(t *testing.T) {
	for _, c := range []struct {
		name, approval, code string
		moved                bool
	}{
		{"apply_plan human", "[approval]\napply_plan = \"human\"\n", "NEEDS_EXPLICIT_REQUEST", false},
		{"default", "", "OK", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, _ := filepath.EvalSymlinks(t.TempDir())
			ws := filepath.Join(base, "ws")
			os.MkdirAll(ws, 0o755)
			os.MkdirAll(filepath.Join(base, "state"), 0o700)
			old := time.Now().Add(-time.Hour)
			os.WriteFile(filepath.Join(ws, "a.jpg"), []byte("A"), 0o644)
			os.Chtimes(filepath.Join(ws, "a.jpg"), old, old)
			pol := filepath.Join(base, "policy.toml")
			os.WriteFile(pol, []byte("audit_log = \"state/audit.jsonl\"\n"+c.approval+
				"[organizer]\nworkspace_root = \"ws\"\njournal = \"state/organizer.journal\"\n"), 0o644)
			p := start(t, append(cleanEnv(t), "BASTION_POLICY_FILE="+pol))
			defer p.kill()
			plan, err := p.call("plan_organize", nil)
			var pd struct {
				PlanID string `json:"plan_id"`
			}
			if err != nil || json.Unmarshal(plan.Detail, &pd) != nil || pd.PlanID == "" {
				t.Fatalf("plan: %v %+v", err, plan)
			}
			r, err := p.call("apply_plan", map[string]any{"plan_id": pd.PlanID})
			if err != nil || r.Code != c.code {
				t.Fatalf("apply_plan: %v %s %q", err, r.Code, r.Reason)
			}
			if _, err := os.Lstat(filepath.Join(ws, "Images", "a.jpg")); (err == nil) != c.moved {
				t.Fatalf("moved = %v, want %v", err == nil, c.moved)
			}
		})
	}
}
