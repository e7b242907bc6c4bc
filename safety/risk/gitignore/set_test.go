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

// TestSetPrefiltersKeepEveryMatch: the Set files a pattern under the first
// byte of its literal prefix and skips it when the path lacks a bigram of
// its literal pieces; neither may reject a real match. Each case checks
// the Set's carried answer against Match on paths that match and paths
// that only nearly do.
func TestSetPrefiltersKeepEveryMatch(t *testing.T) {
	cases := []struct {
		name    string
		pattern string
		paths   []string
	}{
		{"double star matching no directory", "**/config/prod.*", []string{"config/prod.env", "config/prod.a", "config/prod.yml", "a/config/prod.x", "a/configs/prod.x"}},
		{"star spanning a name", "*prod*.env", []string{"x/myprod1.env", "prod.env", "pro.env", "x/prod.en"}},
		{"pieces on both sides of a star", "ab*cd", []string{"abcd", "d/abXcd", "abc", "d/acbd"}},
		{"question marks between one-byte pieces", "a?c", []string{"abc", "d/axc", "ac", "d/abd"}},
		{"escaped star", "a\\*b*c", []string{"a*bxc", "axbxc"}},
		{"class after a prefix", "V[0-9]*__*.sql", []string{"db/V1__init.sql", "db/Va__init.sql"}},
		{"class first", "[ab]x*yz", []string{"axqyz", "d/bxyz", "cxyz"}},
		{"anchored prefix", "/ab*", []string{"ab1", "d/ab1", "ab"}},
		{"anchored, double star inside", "/docs/**/*.md", []string{"docs/x.md", "docs/a/b/x.md", "src/docs/x.md"}},
		{"path with a middle double star", "a/**/b", []string{"a/b", "a/x/y/b", "b/a/b"}},
		{"directory contents", "build/**", []string{"build/x", "build/x/y", "rebuild/x"}},
		{"trailing space escaped", "sp\\ *", []string{"sp x", "spx"}},
		{"non-ASCII pieces", "*é*ü", []string{"aéxü", "d/éü", "aeu"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := MustCompile("unrelated*", tc.pattern, "*.other")
			isDir := map[string]bool{}
			for _, p := range tc.paths {
				for i := range p {
					if p[i] == '/' {
						isDir[p[:i]] = true
					}
				}
				if _, seen := isDir[p]; !seen {
					isDir[p] = false
				}
			}
			var all []string
			for p := range isDir {
				all = append(all, p)
			}
			sort.Strings(all)
			got := carry(NewSet(MustCompile("*.x"), m), all, isDir)
			matched := 0
			for _, p := range all {
				ex, rule := m.Match(p, isDir[p])
				want := int32(-1)
				if ex {
					want, matched = int32(rule), matched+1
				}
				if got[p][1] != want {
					t.Errorf("%q (dir=%v): Set says %d, Match says (%v,%d)", p, isDir[p], got[p][1], ex, rule)
				}
			}
			if matched == 0 {
				t.Fatalf("no path matches %q: the case tests nothing", tc.pattern)
			}
		})
	}
}
