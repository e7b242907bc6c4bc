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
// corpus line that must be refused (by its deny_args) and one that must
// ask a person (by its ask_args, code NEEDS_EXPLICIT_REQUEST), so a new
// rule needs its corpus lines. A rule is matched on its own (as Evaluate
// matches it), because an earlier rule may decide the line first: "git
// rebase --exec" is refused by the built-in --exec rule before the rebase
// rule is tried. It checks rules, not each entry.
func TestCorpusExercisesEveryShippedRule(t *testing.T) {
	var refused, asked [][]string
	for _, c := range readCorpus(t) {
		argv, err := Parse(c.line)
		switch {
		case err != nil:
		case c.code == result.PolicyDenied:
			refused = append(refused, argv)
		case c.code == result.NeedsExplicitRequest:
			asked = append(asked, argv)
		}
	}
	for i, r := range Standard().Policy().Rules {
		t.Run(fmt.Sprintf("%s/%d", r.Command, i), func(t *testing.T) {
			if len(r.DenyArgs) > 0 && !slices.ContainsFunc(refused, func(argv []string) bool { return ruleMatches(r, r.DenyArgs, argv) }) {
				t.Errorf("no refused line of testdata/corpus.tsv matches rule %s %q; add lines it refuses", r.Command, r.DenyArgs)
			}
			if len(r.AskArgs) > 0 && !slices.ContainsFunc(asked, func(argv []string) bool { return ruleMatches(r, r.AskArgs, argv) }) {
				t.Errorf("no NEEDS_EXPLICIT_REQUEST line of testdata/corpus.tsv matches rule %s ask_args %q; add lines it asks about",
					r.Command, r.AskArgs)
			}
		})
	}
}

// ruleMatches reports whether entries (r's DenyArgs or AskArgs) alone
// match argv, as Evaluate applies them.
func ruleMatches(r Rule, entries, argv []string) bool {
	name := Name(argv[0])
	if Name(r.Command) != name {
		return false
	}
	spec := specs[name]
	a := analyze(spec, argv[1:])
	if spec == nil {
		spec = &cmdSpec{}
	}
	_, ok := matchEntries(spec, r, entries, &a)
	return ok
}
