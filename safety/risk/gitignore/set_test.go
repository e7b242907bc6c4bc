package gitignore

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// carry walks sorted paths (every ancestor listed before its children) the
// way a directory walker does and returns each path's Set answers.
func carry(s *Set, paths []string, isDir map[string]bool) map[string][]int32 {
	answers := map[string][]int32{}
	for _, p := range paths {
		var parent []int32
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parent = answers[p[:i]]
		}
		out := make([]int32, s.Len())
		s.Child(parent, p, isDir[p], out)
		answers[p] = out
	}
	return answers
}

// TestSetCarriedAnswersEqualEachMatchersMatch builds Sets of several
// generated pattern lists (the differential corpus, so names holding
// metacharacters, negations, anchored and "**" patterns) and checks every
// Matcher's carried answer against its own Match over the union of the
// lists' trees.
func TestSetCarriedAnswersEqualEachMatchersMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 20261130))
	checked, excluded := 0, 0
	for round := range 300 {
		var ms []*Matcher
		isDir := map[string]bool{}
		for range 1 + r.IntN(5) {
			c := genCase(r)
			m, err := Compile(c.lines)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
			for p, d := range c.isDir {
				isDir[p] = isDir[p] || d
			}
		}
		// A Matcher twice: refs of equal patterns from two Matchers share
		// index entries.
		ms = append(ms, ms[0])
		var paths []string
		for p := range isDir {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		s := NewSet(ms...)
		got := carry(s, paths, isDir)
		for _, p := range paths {
			for i, m := range ms {
				ex, rule := m.Match(p, isDir[p])
				want := int32(-1)
				if ex {
					want = int32(rule)
					excluded++
				}
				if got[p][i] != want {
					t.Fatalf("round %d, matcher %d, %q (dir=%v): Set says %d, Match says (%v,%d)",
						round, i, p, isDir[p], got[p][i], ex, rule)
				}
				checked++
			}
		}
	}
	if excluded < checked/10 {
		t.Fatalf("corpus too weak: %d of %d excluded", excluded, checked)
	}
}

// TestSetOfNoMatchersAndEmptyLists answers -1 for lists that match nothing.
func TestSetOfNoMatchersAndEmptyLists(t *testing.T) {
	s := NewSet(MustCompile(), MustCompile("# only a comment", ""))
	out := make([]int32, 2)
	s.Child(nil, "a/b", false, out)
	if out[0] != -1 || out[1] != -1 {
		t.Fatalf("got %v", out)
	}
	NewSet().Child(nil, "x", true, nil)
}

// TestSetKeepsParentExclusion: nothing under an excluded directory can be
// re-included, whatever the child's own lines say.
func TestSetKeepsParentExclusion(t *testing.T) {
	s := NewSet(MustCompile("build/", "!build/keep.txt"), MustCompile("*.txt"))
	dir := make([]int32, 2)
	s.Child(nil, "build", true, dir)
	out := make([]int32, 2)
	s.Child(dir, "build/keep.txt", false, out)
	if dir[0] != 0 || dir[1] != -1 || out[0] != 0 || out[1] != 0 {
		t.Fatalf("build: %v, build/keep.txt: %v", dir, out)
	}
}

// TestLiteralPrefilterKeepsEveryMatch: the literal piece a pattern's text
// must contain never rejects a real match, including "**/" matching no
// directory at all, a "*" spanning a name, and an escaped or bracketed
// part (where the piece stops).
func TestLiteralPrefilterKeepsEveryMatch(t *testing.T) {
	check(t, []string{"**/config/prod.*"},
		want{"config/prod.env", false, true, 0}, want{"a/config/prod.x", false, true, 0},
		want{"a/configs/prod.x", false, false, -1})
	check(t, []string{"*prod*.env"},
		want{"x/myprod1.env", false, true, 0}, want{"prod.env", false, true, 0}, want{"pro.env", false, false, -1})
	check(t, []string{"a\\*b*c"}, want{"a*bxc", false, true, 0}, want{"axbxc", false, false, -1})
	check(t, []string{"V[0-9]*__*.sql"}, want{"db/V1__init.sql", false, true, 0}, want{"db/Va__init.sql", false, false, -1})
	check(t, []string{"/docs/**/*.md"}, want{"docs/x.md", false, true, 0}, want{"docs/a/b/x.md", false, true, 0},
		want{"src/docs/x.md", false, false, -1})
}
