package command

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
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

// TestCorpusExercisesEveryShippedRule keeps testdata/corpus.tsv in step
// with Standard: every argument rule of the section matches at least one
// corpus line that must be refused, so a new rule needs its corpus lines.
// A rule is matched on its own (as Evaluate matches it), because an
// earlier rule may decide the line first: "git rebase --exec" is refused
// by the built-in --exec rule before the rebase rule is tried. It checks
// rules, not each deny_args entry.
func TestCorpusExercisesEveryShippedRule(t *testing.T) {
	var refused [][]string
	for _, c := range readCorpus(t) {
		if argv, err := Parse(c.line); err == nil && c.code == result.PolicyDenied {
			refused = append(refused, argv)
		}
	}
	for i, r := range Standard().Policy().Rules {
		t.Run(fmt.Sprintf("%s/%d", r.Command, i), func(t *testing.T) {
			if !slices.ContainsFunc(refused, func(argv []string) bool { return ruleMatches(r, argv) }) {
				t.Errorf("no refused line of testdata/corpus.tsv matches rule %s %q; add lines it refuses", r.Command, r.DenyArgs)
			}
		})
	}
}

// ruleMatches reports whether r alone refuses argv, as Evaluate applies it.
func ruleMatches(r Rule, argv []string) bool {
	name := Name(argv[0])
	if Name(r.Command) != name {
		return false
	}
	spec := specs[name]
	a := analyze(spec, argv[1:])
	if spec == nil {
		spec = &cmdSpec{}
	}
	_, ok := matchRule(spec, r, &a)
	return ok
}
