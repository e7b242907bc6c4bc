package gitignore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

type want struct {
	path     string
	isDir    bool
	excluded bool
	rule     int
}

func check(t *testing.T, lines []string, cases ...want) {
	t.Helper()
	m, err := Compile(lines)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		ex, rule := m.Match(c.path, c.isDir)
		if ex != c.excluded || rule != c.rule {
			t.Errorf("patterns %q, path %q (dir=%v): got excluded=%v rule=%d, want excluded=%v rule=%d",
				lines, c.path, c.isDir, ex, rule, c.excluded, c.rule)
		}
	}
}

func TestNegationCannotReincludeFileUnderExcludedDirectory(t *testing.T) {
	check(t, []string{"secrets/", "!secrets/public.txt"},
		want{"secrets/public.txt", false, true, 0},
		want{"secrets/sub/x", false, true, 0})
	check(t, []string{"d/", "!d/sub/*"}, want{"d/sub/f.txt", false, true, 0})
}

func TestNegationReincludesWhenOnlyContentsWereExcluded(t *testing.T) {
	check(t, []string{"logs/*", "!logs/keep.log"},
		want{"logs/keep.log", false, false, 1},
		want{"logs/other.log", false, true, 0})
}

func TestLastMatchingLineWins(t *testing.T) {
	check(t, []string{"*.env", "!prod.env", "prod.env"},
		want{"prod.env", false, true, 2},
		want{"a/dev.env", false, true, 0})
}

func TestTrailingSlashMatchesDirectoriesOnly(t *testing.T) {
	check(t, []string{"build/"},
		want{"build", true, true, 0},
		want{"build", false, false, -1},
		want{"x/build/out.o", false, true, 0})
}

func TestSlashAnchorsPatternToRoot(t *testing.T) {
	check(t, []string{"/a.pem", "c/d"},
		want{"a.pem", false, true, 0},
		want{"x/a.pem", false, false, -1},
		want{"c/d", false, true, 1},
		want{"x/c/d", false, false, -1})
}

func TestPatternWithoutSlashMatchesAnyDepth(t *testing.T) {
	check(t, []string{"*.pem", "id_rsa"},
		want{"a/b/key.pem", false, true, 0},
		want{"deep/er/id_rsa", false, true, 1})
}

func TestDoubleStarForms(t *testing.T) {
	check(t, []string{"**/config", "abc/**", "a/**/b"},
		want{"config", false, true, 0},
		want{"x/y/config", false, true, 0},
		want{"abc", true, false, -1},
		want{"abc/x/y", false, true, 1},
		want{"a/b", false, true, 2},
		want{"a/x/y/b", false, true, 2})
}

func TestWildcardsAndClasses(t *testing.T) {
	check(t, []string{"secret?.txt", "[!a]bc", "[[:digit:]]x", "k[a-c]y"},
		want{"secret1.txt", false, true, 0},
		want{"secret/.txt", false, false, -1},
		want{"xbc", false, true, 1},
		want{"abc", false, false, -1},
		want{"7x", false, true, 2},
		want{"kby", false, true, 3},
		want{"kdy", false, false, -1})
}

func TestEscapesAndComments(t *testing.T) {
	check(t, []string{"# comment", `\#hash`, `\!bang`, "", "   "},
		want{"# comment", false, false, -1},
		want{"#hash", false, true, 1},
		want{"!bang", false, true, 2})
}

func TestTrailingSpacesStrippedUnlessEscaped(t *testing.T) {
	check(t, []string{"foo   ", `bar\ `},
		want{"foo", false, true, 0},
		want{"foo ", false, false, -1},
		want{"bar ", false, true, 1},
		want{"bar", false, false, -1})
}

func TestCompileRefusesEmbeddedNewline(t *testing.T) {
	if _, err := Compile([]string{"a\nb"}); err == nil {
		t.Fatal("a line holding a newline was accepted")
	}
}

func TestMatchSelfWithCarriedParentEqualsMatch(t *testing.T) {
	m := MustCompile("node_modules/", "!node_modules/keep", "*.log", "!important.log", "/out/**", "!out/x")
	paths := []struct {
		p   string
		dir bool
	}{{"node_modules", true}, {"node_modules/keep", false}, {"a", true}, {"a/important.log", false},
		{"a/b.log", false}, {"out", true}, {"out/x", false}, {"out/y", true}, {"out/y/z", false}}
	// Carry each directory's answer down, as a walker does.
	parent := map[string]int{"": -1}
	for _, p := range paths {
		dir := ""
		if i := strings.LastIndexByte(p.p, '/'); i >= 0 {
			dir = p.p[:i]
		}
		var ex bool
		var rule int
		if r := parent[dir]; r >= 0 {
			ex, rule = true, r
		} else {
			matched, neg, r := m.MatchSelf(p.p, p.dir)
			ex, rule = matched && !neg, r
		}
		if p.dir {
			if ex {
				parent[p.p] = rule
			} else {
				parent[p.p] = -1
			}
		}
		wantEx, wantRule := m.Match(p.p, p.dir)
		if ex != wantEx || rule != wantRule {
			t.Errorf("%s: walker says (%v,%d), Match says (%v,%d)", p.p, ex, rule, wantEx, wantRule)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("*.pem\n!a.pem\nd/\n**/x/**", "d/a.pem", false)
	f.Add("[[:alpha:]\\", "a", true)
	f.Add("a/**/b\n!**/*", "a/x/b", false)
	f.Fuzz(func(t *testing.T, patterns, path string, isDir bool) {
		lines := strings.Split(patterns, "\n")
		m, err := Compile(lines)
		if err != nil {
			return
		}
		ex1, r1 := m.Match(path, isDir)
		ex2, r2 := m.Match(path, isDir)
		if ex1 != ex2 || r1 != r2 {
			t.Fatalf("not deterministic: (%v,%d) then (%v,%d)", ex1, r1, ex2, r2)
		}
		if r1 < -1 || r1 >= len(lines) || (r1 == -1 && ex1) {
			t.Fatalf("impossible answer (%v,%d) for %d lines", ex1, r1, len(lines))
		}
		matched, neg, line := m.MatchSelf(path, isDir)
		want := int32(-1)
		if matched && !neg {
			want = int32(line)
		}
		out := make([]int32, 1)
		NewSet(m).Child(nil, path, isDir, out)
		if out[0] != want {
			t.Fatalf("Set.Child says %d, MatchSelf says (%v,%v,%d)", out[0], matched, neg, line)
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	lines := []string{"node_modules/", "*.log", "!important.log", "/build/", "dist/**", ".env*", "*.pem",
		"**/secrets/**", "id_rsa*", "*.p12", "[Tt]emp/", "*.sw?", "target/", "!target/keep", "vendor/",
		"coverage/", "*.tfstate", "*.tfvars", "credentials.json", ".npmrc", "docs/**/*.md"}
	m := MustCompile(lines...)
	r := rand.New(rand.NewPCG(1, 2))
	comps := []string{"src", "lib", "a", "node_modules", "pkg", "internal", "cmd", "docs", "build", "x"}
	leaf := []string{"main.go", "index.js", "a.log", "README.md", ".env", "key.pem", "x.swp", "y.tfvars"}
	paths := make([]string, 4096)
	for i := range paths {
		var parts []string
		for range 1 + r.IntN(5) {
			parts = append(parts, comps[r.IntN(len(comps))])
		}
		paths[i] = strings.Join(append(parts, leaf[r.IntN(len(leaf))]), "/")
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m.Match(paths[i%len(paths)], false)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "paths/s")
}

func ExampleMatcher_Match() {
	m := MustCompile("secrets/", "!secrets/README.md", "*.log", "!keep.log")
	fmt.Println(m.Match("secrets/README.md", false))
	fmt.Println(m.Match("logs/keep.log", false))
	fmt.Println(m.Match("logs/debug.log", false))
	// Output:
	// true 0
	// false 3
	// true 2
}

// TestCarriageReturnInPatterns: git strips one "\r" at the end of a line
// and keeps any other; macOS's template matches "Icon\r" files with
// "Icon[\r]" (older versions with "Icon\r\r").
func TestCarriageReturnInPatterns(t *testing.T) {
	cases := []struct {
		name, line, path string
		want             bool
	}{
		{"class holding CR matches Icon CR", "Icon[\r]", "Icon\r", true},
		{"class holding CR misses plain Icon", "Icon[\r]", "Icon", false},
		{"two trailing CRs keep one", "Icon\r\r", "Icon\r", true},
		{"two trailing CRs miss plain Icon", "Icon\r\r", "Icon", false},
		{"one trailing CR is the line end", "Icon\r", "Icon", true},
		{"CR inside a pattern is literal", "a\rb", "a\rb", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Compile([]string{".DS_Store", c.line})
			if err != nil {
				t.Fatalf("Compile refused %q: %v", c.line, err)
			}
			if got, _ := m.Match(c.path, false); got != c.want {
				t.Errorf("Match(%q) with %q = %v, want %v", c.path, c.line, got, c.want)
			}
			if got, _ := m.Match(".DS_Store", false); !got {
				t.Error(".DS_Store is no longer excluded")
			}
		})
	}
}
