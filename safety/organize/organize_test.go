package organize

import (
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/result"
)

func TestProtectionSetIsTheFilteredRuleSet(t *testing.T) {
	r, err := New(config.Organizer{Skip: []config.SkipRule{{Name: "no-keys", Layer: "protection", When: []string{"ext:.pem"}, Reason: "keys stay"}}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, x := range r.All() {
		if x.Layer == Protection {
			want = append(want, x.Name)
		}
	}
	var got []string
	for _, x := range r.protection {
		got = append(got, x.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || !strings.Contains(strings.Join(got, ","), "no-keys") {
		t.Fatalf("protection %v, filtered %v", got, want)
	}
	if s := r.Protect(Facts{Name: "a.pem", Kind: File}); s == nil || s.Code != result.PolicyDenied {
		t.Fatalf("policy protection rule not applied: %+v", s)
	}
}

func TestPolicyCannotWeakenProtectionOrOmitLayer(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  config.SkipRule
	}{
		{"no layer", config.SkipRule{Name: "x", When: []string{"dir"}, Reason: "r"}},
		{"protection rule replaced", config.SkipRule{Name: "symlink", Layer: "restraint", When: []string{}, Reason: "r"}},
		{"unknown layer", config.SkipRule{Name: "x", Layer: "sometimes", When: []string{"dir"}, Reason: "r"}},
		{"unknown condition", config.SkipRule{Name: "x", Layer: "restraint", When: []string{"size>1"}, Reason: "r"}},
		{"no reason", config.SkipRule{Name: "x", Layer: "restraint", When: []string{"dir"}}},
		{"no name", config.SkipRule{Layer: "restraint", When: []string{"dir"}, Reason: "r"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := New(config.Organizer{Skip: []config.SkipRule{c.bad}}); err == nil {
				t.Errorf("accepted %+v", c.bad)
			}
		})
	}
}

func TestRestraintIsPlannerOnlyAndNeedsExplicitRequest(t *testing.T) {
	r, _ := New(config.Organizer{})
	for _, c := range []struct {
		name string
		f    Facts
	}{
		{"installer", Facts{Name: "setup.exe", Kind: File}},
		{"dotfile", Facts{Name: ".bashrc", Kind: File}},
		{"recent", Facts{Name: "x.pdf", Kind: File, ModTime: time.Now(), Category: "Documents"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := r.Plan(c.f); s == nil || s.Code != result.NeedsExplicitRequest || s.Layer != Restraint {
				t.Errorf("%s: plan %+v", c.f.Name, s)
			}
			if s := r.Protect(c.f); s != nil {
				t.Errorf("%s: protection refused %+v", c.f.Name, s)
			}
		})
	}
	if s := r.Protect(Facts{Name: "l.pdf", Kind: Symlink}); s == nil || s.Rule != "symlink" {
		t.Fatalf("symlink: %+v", s)
	}
}

func TestRestraintRuleCanBeDisabledByPolicy(t *testing.T) {
	r, err := New(config.Organizer{Skip: []config.SkipRule{{Name: "installer", Layer: "restraint", When: []string{}, Reason: "off"}},
		Categories: map[string][]string{"Installers": {".exe"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Plan(Facts{Name: "setup.exe", Kind: File, Category: r.Category("setup.exe")}); s != nil {
		t.Fatalf("%+v", s)
	}
}
