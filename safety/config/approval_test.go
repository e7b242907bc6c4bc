package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShippedPoliciesChooseTheSafeApprovalDefaults: each shipped policy
// writes [approval] out, with the person confirming deletion, undoable
// moves left to the agent, a refusal for a client that cannot ask, and ten
// minutes to answer. Writing the values (instead of relying on the
// defaults) keeps the reason beside each one.
func TestShippedPoliciesChooseTheSafeApprovalDefaults(t *testing.T) {
	for _, file := range []string{"policy.toml", "policy.example.toml", "dev.example.toml"} {
		t.Run(file, func(t *testing.T) {
			pol, err := LoadFile(filepath.Join("..", "..", "policies", file))
			if err != nil {
				t.Fatal(err)
			}
			if pol.Approval.Fallback == "" || pol.Approval.TimeoutSeconds == 0 {
				t.Errorf("[approval] does not write fallback and timeout_seconds out: %+v", pol.Approval)
			}
			reclaim, applyPlan, moveFile := pol.Approval.Who()
			fallback, timeout := pol.Approval.Asking()
			if reclaim != "human" || applyPlan != "agent" || moveFile != "agent" || fallback != "refuse" || timeout != 600*time.Second {
				t.Errorf("[approval] is reclaim %s, apply_plan %s, move_file %s, fallback %s, timeout %v; want human, agent, agent, refuse, 10m0s",
					reclaim, applyPlan, moveFile, fallback, timeout)
			}
		})
	}
}

func TestApprovalRefusesUndocumentedValues(t *testing.T) {
	cases := []struct{ name, toml, want string }{
		{"reclaim yes", "[approval]\nreclaim = \"yes\"\n", "[approval] reclaim must be"},
		{"apply_plan Human", "[approval]\napply_plan = \"Human\"\n", "[approval] apply_plan must be"},
		{"move_file nobody", "[approval]\nmove_file = \"nobody\"\n", "[approval] move_file must be"},
		{"fallback allow", "[approval]\nfallback = \"allow\"\n", "[approval] fallback must be"},
		{"negative timeout", "[approval]\ntimeout_seconds = -1\n", "[approval] timeout_seconds must be"},
		{"timeout over a day", "[approval]\ntimeout_seconds = 86401\n", "[approval] timeout_seconds must be"},
		{"unknown key", "[approval]\nterminal = \"human\"\n", "terminal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := parseApproval(c.toml); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%q: %v, want an error containing %q", c.toml, err, c.want)
			}
		})
	}
	for _, ok := range []string{"", "[approval]\nreclaim = \"agent\"\napply_plan = \"human\"\nmove_file = \"human\"\nfallback = \"agent\"\ntimeout_seconds = 86400\n"} {
		if err := parseApproval(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// parseApproval decodes a policy and validates its [approval] section.
func parseApproval(s string) error {
	p, err := Parse([]byte(s))
	if err != nil {
		return err
	}
	return p.Approval.validate()
}
