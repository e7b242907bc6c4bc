package risk

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// summarize is Summarize of the whole root dir, failing the test on error.
func summarize(t testing.TB, e *Engine, dir string) *Summary {
	t.Helper()
	s, err := e.Summarize(context.Background(), openRoot(t, dir), ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// descriptorCounts classifies every file under dir with Classify (content
// and git facts included) and counts them by importance.
func descriptorCounts(t testing.TB, e *Engine, dir string) map[Importance]int {
	t.Helper()
	r := openRoot(t, dir)
	want := map[Importance]int{HighRisk: 0, HighValue: 0, Normal: 0, Ignorable: 0}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		desc, err := e.Classify(r, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		want[desc.Metadata.Importance]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestSummaryLowersAsTheDescriptorDoes: for every lowering case of the
// descriptor, with the content scanner on and off, the summary of a tree
// holding that one file counts and lists it under the importance its
// descriptor gives.
func TestSummaryLowersAsTheDescriptorDoes(t *testing.T) {
	for _, scan := range []struct {
		name  string
		bytes int
	}{{"scanner on", 0}, {"scanner off", -1}} {
		for _, c := range placeholderCases() {
			t.Run(scan.name+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				write(t, dir, c.rel, c.content)
				e := newEngine(t, Options{ScanBytes: scan.bytes})
				d, err := e.Classify(openRoot(t, dir), c.rel)
				if err != nil {
					t.Fatal(err)
				}
				imp := d.Metadata.Importance
				if scan.bytes == 0 && imp != c.want {
					t.Fatalf("descriptor %s, want %s", imp, c.want)
				}
				s := summarize(t, e, dir)
				lowered := 0
				if imp == Normal {
					lowered = 1
				}
				if s.Counts[imp] != 1 || s.Lowered != lowered || (len(s.HighRisk) == 1) != (imp == HighRisk) {
					t.Fatalf("descriptor %s; summary counts %v, lowered %d, high risk %+v", imp, s.Counts, s.Lowered, s.HighRisk)
				}
			})
		}
	}
}

// TestSummaryOfPlaceholderFiles: a tree with files HIGH_RISK by name that
// hold only placeholders (at the top, in a RISK area, inside an ignorable
// area), one .env with a real-looking secret and a private key. The
// summary counts every file as its descriptor does and lists only what
// stays HIGH_RISK; a rule file that turns lowering off keeps them all
// HIGH_RISK in both.
func TestSummaryOfPlaceholderFiles(t *testing.T) {
	off := "[content]\nlower_placeholders = false\n"
	cases := []struct {
		name, operator, project string
		lowered                 []string
	}{
		{"lowering on", "", "", []string{".env.local", "config/secrets.yml", "environments/prod/app.env", "node_modules/x/.env.test"}},
		{"operator turns lowering off", off, "", nil},
		{"project file turns lowering off", "", off, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, cfg := t.TempDir(), t.TempDir()
			write(t, dir, "package.json", "{}")
			write(t, dir, ".env.local", "API_KEY=changeme\nDB_PASSWORD=\nTOKEN=${TOKEN}\n")
			write(t, dir, ".env", "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n")
			write(t, dir, "config/secrets.yml", "password: <password>\napi_key: xxx\n")
			write(t, dir, "environments/prod/app.env", "SECRET=your-secret-here\n")
			write(t, dir, "node_modules/x/.env.test", "KEY=changeme\n")
			write(t, dir, "node_modules/x/index.js", "")
			write(t, dir, "id_rsa", "API_KEY=changeme\n")
			var opts Options
			if c.operator != "" {
				opts.RuleFiles = []string{write(t, cfg, "ops.toml", c.operator)}
			}
			if c.project != "" {
				write(t, dir, ProjectFile, c.project)
			}
			e := newEngine(t, opts)
			s := summarize(t, e, dir)
			if want := descriptorCounts(t, e, dir); !mapsEqual(s.Counts, want) {
				t.Errorf("summary counts %v, descriptors %v", s.Counts, want)
			}
			var listed []string
			for _, it := range s.HighRisk {
				listed = append(listed, it.Path)
			}
			wantListed := []string{".env", "environments/prod/", "id_rsa"}
			for _, p := range []string{".env.local", "config/secrets.yml", "node_modules/x/.env.test"} {
				if !slices.Contains(c.lowered, p) {
					wantListed = append(wantListed, p)
				}
			}
			slices.Sort(listed)
			slices.Sort(wantListed)
			if !slices.Equal(listed, wantListed) {
				t.Errorf("high risk listed %q, want %q", listed, wantListed)
			}
			if s.Lowered != len(c.lowered) || s.ContentUnread != 0 {
				t.Errorf("lowered %d, unread %d; want %d, 0", s.Lowered, s.ContentUnread, len(c.lowered))
			}
			line := fmt.Sprintf("%d files high risk by name counted as NORMAL: %s", len(c.lowered), PlaceholderReason)
			if strings.Contains(s.Text(), line) != (len(c.lowered) > 0) || strings.Contains(s.Text(), "not read") {
				t.Errorf("text (want the lowering line: %v):\n%s", len(c.lowered) > 0, s.Text())
			}
		})
	}
}

func mapsEqual(a, b map[Importance]int) bool {
	for _, imp := range []Importance{HighRisk, HighValue, Normal, Ignorable} {
		if a[imp] != b[imp] {
			return false
		}
	}
	return true
}

// TestSummaryContentChecksAreBounded: past MaxSummaryContentChecks the
// files HIGH_RISK by name keep that verdict and are counted as unread;
// files no content can lower (a private key's name) use no check.
func TestSummaryContentChecksAreBounded(t *testing.T) {
	t.Run("past the bound", func(t *testing.T) {
		dir := t.TempDir()
		for i := range MaxSummaryContentChecks + 5 {
			write(t, dir, fmt.Sprintf(".env.k%03d", i), "API_KEY=changeme\n")
		}
		s := summarize(t, newEngine(t, Options{}), dir)
		if s.Lowered != MaxSummaryContentChecks || s.ContentUnread != 5 || s.Counts[HighRisk] != 5 ||
			s.Counts[Normal] != MaxSummaryContentChecks || len(s.HighRisk) != 5 {
			t.Fatalf("lowered %d, unread %d, counts %v, listed %d", s.Lowered, s.ContentUnread, s.Counts, len(s.HighRisk))
		}
		if !strings.Contains(s.Text(), fmt.Sprintf("5 files high risk by name not read (the summary checks the content of at most %d)", MaxSummaryContentChecks)) {
			t.Fatalf("text does not say what was not read:\n%s", s.Text())
		}
	})
	t.Run("names no content lowers use no check", func(t *testing.T) {
		dir := t.TempDir()
		for i := range MaxSummaryContentChecks + 5 {
			write(t, dir, fmt.Sprintf("a%03d.pem", i), "KEY=changeme\n")
		}
		write(t, dir, "z/.env.local", "API_KEY=changeme\n")
		s := summarize(t, newEngine(t, Options{}), dir)
		if s.Lowered != 1 || s.ContentUnread != 0 || s.Counts[HighRisk] != MaxSummaryContentChecks+5 {
			t.Fatalf("lowered %d, unread %d, counts %v", s.Lowered, s.ContentUnread, s.Counts)
		}
	})
}

// TestSummaryLoweringWithGitFacts: in a repository, a lowered file that git
// tracks, and one git ignores, count as NORMAL in the summary as in their
// descriptors (a RISK rule still matches them, so git does not make them
// IGNORABLE, and the tracked one is not told to consult history).
func TestSummaryLoweringWithGitFacts(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	write(t, dir, ".gitignore", ".env.local\n")
	write(t, dir, ".env.local", "API_KEY=changeme\n")
	write(t, dir, ".env.test", "API_KEY=<key>\n")
	write(t, dir, ".env", "DB_PASSWORD=Zq8vT2mLx91Rk4Pw\n")
	runGit(t, dir, "", "init", "-q")
	runGit(t, dir, "", "add", ".gitignore", ".env.test", ".env")
	e := newEngine(t, Options{})
	s := summarize(t, e, dir)
	if s.Git == nil || s.Git.Tracked != 3 || s.Git.Ignored != 1 {
		t.Fatalf("git counts %+v", s.Git)
	}
	if want := descriptorCounts(t, e, dir); !mapsEqual(s.Counts, want) {
		t.Errorf("summary counts %v, descriptors %v", s.Counts, want)
	}
	var listed []string
	for _, it := range s.HighRisk {
		listed = append(listed, it.Path)
	}
	// The repository's protected paths (safety/protect) are listed too.
	if want := []string{".env", ".git/", ".git/config", ".git/hooks/", ".git/info/"}; s.Lowered != 2 || !slices.Equal(listed, want) {
		t.Fatalf("lowered %d, high risk listed %q: want 2 lowered, %q listed", s.Lowered, listed, want)
	}
	r := openRoot(t, dir)
	for _, rel := range []string{".env.local", ".env.test"} {
		d, err := e.Classify(r, rel)
		if err != nil {
			t.Fatal(err)
		}
		if d.Metadata.Importance != Normal {
			t.Errorf("descriptor of %s: %s %q", rel, d.Metadata.Importance, d.Metadata.Reasons)
		}
	}
}

// BenchmarkSummaryLoweringCost measures, on the summary benchmarks' tree
// (some 9,000 empty .env* files inside node_modules/, all HIGH_RISK by
// name), bare and as a git repository (as BenchmarkSummaryGitVsWalk), the
// summary with placeholder lowering against the same summary with the
// scanner off (no content check), in one loop, each going first in turn,
// so that the machine's load weighs on both alike.
func BenchmarkSummaryLoweringCost(b *testing.B) {
	for _, repo := range []bool{false, true} {
		name := "bare"
		if repo {
			name = "git"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			genTree(b, root, 100_000, 7)
			if repo {
				gitEnv(b)
				write(b, root, ".gitignore", "*.log\nbuild/\n")
				runGit(b, root, "", "init", "-q")
				runGit(b, root, "", "add", ".")
			}
			loweringCost(b, root)
		})
	}
}

// loweringCost is BenchmarkSummaryLoweringCost on the tree at root.
func loweringCost(b *testing.B, root string) {
	on, off := newEngine(b, Options{}), newEngine(b, Options{ScanBytes: -1})
	r := openRoot(b, root)
	run := func(e *Engine) (*Summary, time.Duration) {
		t0 := time.Now()
		s, err := e.Summarize(context.Background(), r, ".", SummaryLimits{})
		if err != nil {
			b.Fatal(err)
		}
		return s, time.Since(t0)
	}
	var tOn, tOff time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		var s *Summary
		var dOn, dOff time.Duration
		if i%2 == 0 { // alternate which goes first
			s, dOn = run(on)
			_, dOff = run(off)
		} else {
			_, dOff = run(off)
			s, dOn = run(on)
		}
		i++
		tOn += dOn
		tOff += dOff
		if s.ContentUnread == 0 {
			b.Fatal("the tree holds fewer files to check than the bound")
		}
	}
	b.ReportMetric(float64(tOn.Milliseconds())/float64(b.N), "lowering-ms/op")
	b.ReportMetric(float64(tOff.Milliseconds())/float64(b.N), "names-only-ms/op")
	b.ReportMetric(float64(tOn)/float64(tOff), "lowering/names-only")
}
