package risk

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corpus returns n project-like relative paths.
func corpus(n int) []string {
	r := rand.New(rand.NewPCG(42, 7))
	dirs := []string{"src", "internal", "pkg", "cmd", "node_modules", "lib", "docs", "test", "config", "app",
		"migrations", "build", "dist", "vendor", ".github/workflows", "scripts", "assets"}
	leaves := []string{"main.go", "index.js", "util.ts", "README.md", ".env", "server.pem", "app.log",
		"package.json", "schema.sql", "style.css", "a.py", "Dockerfile", "settings.yaml", "id_rsa", "go.sum"}
	out := make([]string, n)
	for i := range out {
		var parts []string
		for range 1 + r.IntN(5) {
			parts = append(parts, dirs[r.IntN(len(dirs))])
		}
		out[i] = strings.Join(append(parts, leaves[r.IntN(len(leaves))]), "/")
	}
	return out
}

// BenchmarkClassifyRulesOnly measures ClassifyPath on 100,000 paths and,
// in the same run, the same classification without the per-directory memo
// (every matcher's Match re-matching each ancestor), and reports both
// rates and their ratio.
func BenchmarkClassifyRulesOnly(b *testing.B) {
	root := b.TempDir()
	for _, m := range []string{"package.json", "go.mod", "pyproject.toml", "Dockerfile"} {
		write(b, root, m, "")
	}
	e := newEngine(b, Options{})
	paths := corpus(100_000)
	st := e.state(cleanKey(root), pathOpener(root))
	var memo, bare time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		for _, p := range paths {
			if _, err := e.ClassifyPath(root, p, false); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, p := range paths {
			_ = describe(p, false, unmemoisedMatches(st, p, false), nil, false, false)
		}
		memo += t1.Sub(t0)
		bare += time.Since(t1)
		n += len(paths)
	}
	b.ReportMetric(float64(n)/memo.Seconds(), "paths/s")
	b.ReportMetric(float64(n)/bare.Seconds(), "unmemoised-paths/s")
	b.ReportMetric(float64(bare)/float64(memo), "speedup")
}

// unmemoisedMatches is the classification before the directory memo: each
// matcher's Match walks the path's ancestors itself.
func unmemoisedMatches(st *rootState, rel string, isDir bool) []match {
	var ms []match
	for _, fm := range st.flat {
		if ex, line := fm.m.Match(rel, isDir); ex {
			i := fm.set.index[fm.cat][line]
			ms = append(ms, match{set: fm.set, rule: &fm.set.Rules[i], idx: i})
		}
	}
	sortMatches(ms)
	return ms
}

// TestMemoisedMatchesEqualMatch checks the memo against each matcher's own
// Match on the benchmark corpus, for files and directories.
func TestMemoisedMatchesEqualMatch(t *testing.T) {
	root := t.TempDir()
	for _, m := range []string{"package.json", "go.mod", "pyproject.toml", "Dockerfile"} {
		write(t, root, m, "")
	}
	e := newEngine(t, Options{})
	st := e.state(cleanKey(root), pathOpener(root))
	for _, p := range corpus(20_000) {
		for _, isDir := range []bool{false, true} {
			a, b := st.matches(p, isDir), unmemoisedMatches(st, p, isDir)
			if len(a) != len(b) {
				t.Fatalf("%s dir=%v: %d matches, Match gives %d", p, isDir, len(a), len(b))
			}
			for i := range a {
				if a[i].rule != b[i].rule {
					t.Fatalf("%s dir=%v: match %d differs", p, isDir, i)
				}
			}
		}
	}
}

// BenchmarkSummaryVsWalk measures a full summary of a 100,000-file tree
// against a bare filepath.WalkDir of the same tree, in the same run, and
// reports the ratio (goal: at most 1.5).
func BenchmarkSummaryVsWalk(b *testing.B) {
	root := b.TempDir()
	genTree(b, root, 100_000, 7)
	e := newEngine(b, Options{})
	r := openRoot(b, root)
	var walk, sum time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		files := 0
		if err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files++
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		s, err := e.Summarize(context.Background(), r, ".", SummaryLimits{})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if s.Files != files {
			b.Fatal(fmt.Sprintf("summary saw %d files, walk %d", s.Files, files))
		}
		walk += t1.Sub(t0)
		sum += t2.Sub(t1)
	}
	b.ReportMetric(float64(walk.Milliseconds())/float64(b.N), "walk-ms/op")
	b.ReportMetric(float64(sum.Milliseconds())/float64(b.N), "summary-ms/op")
	b.ReportMetric(float64(sum)/float64(walk), "summary/walk")
}
