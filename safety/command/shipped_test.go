package command

import (
	"reflect"
	"slices"
	"testing"
)

// TestShippedSectionIsStandard proves policies/terminal-section.toml (and
// so the corpus, judged against it) is what Standard generates.
func TestShippedSectionIsStandard(t *testing.T) {
	got, want := shipped(t), Standard().Policy()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"allowlist", got.Allow, want.Allow},
		{"denylist", got.Deny, want.Deny},
		{"rules", got.Rules, want.Rules},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s differs from Standard: run make policy-docs\n got %v\nwant %v", sectionPath, c.got, c.want)
			}
		})
	}
}

// TestStandardDeniesEveryProgram proves the shipped denylist derives from
// the Programs table: every shell, wrapper, interpreter and tool is on it.
func TestStandardDeniesEveryProgram(t *testing.T) {
	deny := Standard().Policy().Deny
	for _, p := range Programs() {
		t.Run(p.Name, func(t *testing.T) {
			if !slices.Contains(deny, p.Name) {
				t.Errorf("%s %q is not on the Standard denylist", p.Kind, p.Name)
			}
		})
	}
	seen := map[string]bool{}
	for _, n := range deny {
		if seen[n] {
			t.Errorf("%q is on the denylist twice", n)
		}
		seen[n] = true
	}
}

// TestShippedSectionsValidate keeps every generated section loadable by
// terminald: Standard in the allowlist profile, Dev in the sandbox profile.
func TestShippedSectionsValidate(t *testing.T) {
	for _, c := range []struct {
		name      string
		section   Section
		sandboxed bool
	}{
		{"standard", Standard(), false},
		{"dev", Dev(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.section.Policy()
			p.Sandboxed = c.sandboxed
			if err := p.Validate(); err != nil {
				t.Error(err)
			}
			if len(p.Allow) == 0 || len(p.Rules) == 0 {
				t.Errorf("an empty section: %+v", p)
			}
		})
	}
	if dev := Dev().Policy(); dev.Validate() == nil {
		t.Errorf("Dev allowlists shells; it must not validate in the allowlist profile")
	}
}
