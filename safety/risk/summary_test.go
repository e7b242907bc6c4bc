package risk

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummaryGroupsAreasAndListsRiskFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, "package.json", "{}")
	for i := range 1234 {
		write(t, root, fmt.Sprintf("node_modules/pkg%d/index.js", i), "")
	}
	write(t, root, "node_modules/pkg1/.env", "X=1\n")
	write(t, root, ".env", "")
	write(t, root, "src/a.js", "")
	write(t, root, "src/b.js", "")
	write(t, root, "migrations/001.sql", "")
	write(t, root, "logs/a.log", "")
	write(t, root, "x.log", "")
	write(t, root, "y.log", "")
	e := newEngine(t, Options{})
	s, err := e.Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	text := s.Text()
	for _, want := range []string{
		"node_modules/: 1,235 files, ignorable",
		".env: high risk, Environment file",
		"node_modules/pkg1/.env: high risk",
		"migrations/: 1 files, high risk",
		"src/: 2 files, high value",
		"*.log: 2 files, ignorable",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if s.Files != 1243 || s.Counts[HighRisk] != 3 || s.Counts[Ignorable] != 1237 {
		t.Errorf("counts: files %d %v", s.Files, s.Counts)
	}
}

// TestSummaryCountsAgreeWithClassifyPath checks the walk's carried-parent
// matching against the per-path engine on every file of a tree.
func TestSummaryCountsAgreeWithClassifyPath(t *testing.T) {
	root := t.TempDir()
	genTree(t, root, 3000, 7)
	e := newEngine(t, Options{})
	s, err := e.Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[Importance]int{}
	files := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		want[classifyPath(t, e, root, filepath.ToSlash(rel), false).Metadata.Importance]++
		files++
		return nil
	})
	if s.Files != files {
		t.Errorf("files: summary %d, walk %d", s.Files, files)
	}
	for _, imp := range []Importance{HighRisk, HighValue, Normal, Ignorable} {
		if s.Counts[imp] != want[imp] {
			t.Errorf("%s: summary %d, ClassifyPath %d", imp, s.Counts[imp], want[imp])
		}
	}
}

func TestSummaryDoesNotFollowSymlinkedDirectory(t *testing.T) {
	outside := t.TempDir()
	for i := range 10 {
		write(t, outside, fmt.Sprintf("f%d.txt", i), "")
	}
	root := t.TempDir()
	write(t, root, "a.txt", "")
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	s, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != 2 || s.Dirs != 0 {
		t.Errorf("walk followed a symlink: files %d dirs %d", s.Files, s.Dirs)
	}
}

func TestSummaryOfSubdirectoryKeepsAncestorRules(t *testing.T) {
	root := t.TempDir()
	write(t, root, "node_modules/a/b.js", "")
	s, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), "node_modules/a", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts[Ignorable] != 1 {
		t.Errorf("%+v", s)
	}
	if _, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), "../x", SummaryLimits{}); err == nil {
		t.Error("summary of a path outside the root accepted")
	}
}

func TestSummaryStopsAtEntryLimit(t *testing.T) {
	root := t.TempDir()
	genTree(t, root, 200, 3)
	s, err := newEngine(t, Options{}).Summarize(context.Background(), openRoot(t, root), ".", SummaryLimits{MaxEntries: 50, MaxListed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || s.Files+s.Dirs > 50 || !strings.Contains(s.Text(), "partial") {
		t.Errorf("%+v", s)
	}
}

// genTree makes a project-like tree of n files: sources, a node_modules
// bulk, secrets, migrations, logs.
func genTree(t testing.TB, root string, n int, seed int) {
	t.Helper()
	write(t, root, "package.json", "{}")
	write(t, root, "go.mod", "module x\n")
	kinds := []string{"src/pkg%d/file%d.go", "node_modules/m%d/lib/f%d.js", "node_modules/m%d/.env%d",
		"docs/p%d/d%d.md", "migrations/%d_%d.sql", "app%d/logs/%d.log", "internal/x%d/y%d.go",
		"config/c%d/settings%d.yaml", "dist/a%d/b%d.js", "deep/a/b/c/d%d/e%d.txt", "keys%d/k%d.pem"}
	for i := 0; i < n; i++ {
		k := kinds[(i*seed)%len(kinds)]
		rel := fmt.Sprintf(k, i%97, i)
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
