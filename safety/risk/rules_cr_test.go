package risk

import (
	"testing"
)

// TestRuleFileAcceptsCarriageReturnPatterns: a pattern holding a carriage
// return is a valid gitignore pattern (macOS's template matches "Icon\r"
// with "Icon[\r]"); the file is accepted and its other rules apply.
func TestRuleFileAcceptsCarriageReturnPatterns(t *testing.T) {
	cases := []struct {
		name, pattern, path string
		want                bool
	}{
		{"class holding CR matches Icon CR", `Icon[\r]`, "Icon\r", true},
		{"class holding CR misses Icon", `Icon[\r]`, "Icon", false},
		{"trailing CR is the pattern's own", `Icon\r`, "Icon\r", true},
		{"trailing CR is not a line end", `Icon\r`, "Icon", false},
		{"CR inside", `a\rb`, "a\rb", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := "[[rule]]\npattern = \".DS_Store\"\ncategory = \"IGNORE\"\nreason = \"Finder metadata.\"\n" +
				"[[rule]]\npattern = \"" + c.pattern + "\"\ncategory = \"IGNORE\"\nreason = \"Custom folder icon.\"\n"
			rs, err := ParseRules("operator:mac.toml", []byte(doc))
			if err != nil {
				t.Fatalf("the file was refused: %v", err)
			}
			m := rs.cats[Ignore.rank()]
			if got, _ := m.Match(c.path, false); got != c.want {
				t.Errorf("%q matches %q = %v, want %v", c.pattern, c.path, got, c.want)
			}
			if got, _ := m.Match(".DS_Store", false); !got {
				t.Error(".DS_Store no longer matches")
			}
		})
	}
}
