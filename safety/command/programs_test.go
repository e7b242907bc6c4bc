package command

import (
	"slices"
	"testing"
)

// TestProgramsTableIsNormalised keeps the one table usable by Name: every
// entry is its own normalised name, appears once, and its typed spellings
// normalise back to it.
func TestProgramsTableIsNormalised(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Programs() {
		t.Run(p.Name, func(t *testing.T) {
			if Name(p.Name) != p.Name {
				t.Errorf("%q normalises to %q; Evaluate would never see it", p.Name, Name(p.Name))
			}
			if seen[p.Name] {
				t.Errorf("%q is listed twice", p.Name)
			}
			seen[p.Name] = true
			for _, s := range p.Typed {
				if Name(s) != p.Name {
					t.Errorf("typed spelling %q normalises to %q, not %q", s, Name(s), p.Name)
				}
			}
			if p.Kind.Why() == "" || p.Kind.String() == "unknown" {
				t.Errorf("kind %d has no words", p.Kind)
			}
		})
	}
}

// TestNeverIsTheTablesShellsWrappersAndInterpreters proves the never table
// is derived from Programs: exactly its shells, wrappers and interpreters,
// each with its kind's reason, and no tool.
func TestNeverIsTheTablesShellsWrappersAndInterpreters(t *testing.T) {
	want := 0
	for _, p := range Programs() {
		t.Run(p.Name, func(t *testing.T) {
			why, ok := Never(p.Name)
			if ok != p.Kind.Never() {
				t.Fatalf("Never(%q) = %v for a %s", p.Name, ok, p.Kind)
			}
			if ok && why != p.Kind.Why() {
				t.Errorf("Never(%q) says %q, want %q", p.Name, why, p.Kind.Why())
			}
			for _, s := range p.Typed {
				if _, tok := Never(s); tok != ok {
					t.Errorf("Never(%q) = %v, but Never(%q) = %v", s, tok, p.Name, ok)
				}
			}
		})
		if p.Kind.Never() {
			want++
		}
	}
	if len(never) != want {
		t.Errorf("never has %d entries; the table has %d shells, wrappers and interpreters", len(never), want)
	}
	for _, tool := range ProgramsOf(Tool) {
		if _, ok := never[tool]; ok {
			t.Errorf("tool %q is in the never table", tool)
		}
	}
}

func TestLookupTakesAnySpelling(t *testing.T) {
	for _, c := range []struct {
		typed string
		want  string
		kind  Kind
	}{
		{"python3.12", "python", Interpreter},
		{"PWSH", "powershell", Shell},
		{"/usr/bin/env", "env", Wrapper},
		{"gmake", "", 0},
		{"make", "make", Tool},
		{"pip3", "pip", Tool},
	} {
		t.Run(c.typed, func(t *testing.T) {
			p, ok := Lookup(c.typed)
			if ok != (c.want != "") || p.Name != c.want || p.Kind != c.kind {
				t.Errorf("Lookup(%q) = %+v, %v; want %q (%s)", c.typed, p, ok, c.want, c.kind)
			}
		})
	}
	if got := ProgramsOf(Tool); !slices.Contains(got, "make") || slices.Contains(got, "sh") {
		t.Errorf("ProgramsOf(Tool) = %q", got)
	}
}
