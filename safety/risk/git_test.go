package risk

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// gitEnv isolates git (the test oracle) and the radar from the machine's
// own git config: a fresh HOME and XDG_CONFIG_HOME, no system config.
func gitEnv(t testing.TB) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
	return home
}

func runGit(t testing.TB, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// check-ignore exits 1 when nothing is ignored.
		if ee, ok := err.(*exec.ExitError); !(ok && ee.ExitCode() == 1 && len(args) > 0 && args[0] == "check-ignore") {
			t.Fatalf("git %v: %v: %s", args, err, errb.String())
		}
	}
	return out.String()
}

func gitInit(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "", "init", "-q")
	return dir
}

func readIndex(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGitIndexVersionsAgreeWithLsFiles reads the index in versions 2, 3
// and 4 (v4 compresses path prefixes; v3 carries the extended flags of an
// intent-to-add entry) and compares its paths with git ls-files.
func TestGitIndexVersionsAgreeWithLsFiles(t *testing.T) {
	gitEnv(t)
	dir := gitInit(t)
	for _, rel := range []string{"a.txt", "src/main.go", "src/main_test.go", "src/internal/deep/x.go",
		"src/internal/deep/xy.go", "docs/ä ü.md", "z/very/long/" + strings.Repeat("n", 120) + ".txt", ".env"} {
		write(t, dir, rel, rel)
	}
	runGit(t, dir, "", "add", ".")
	for _, v := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			if v == 3 {
				// An intent-to-add entry carries extended flags, which
				// only versions 3 and 4 can hold.
				write(t, dir, "later/intent.txt", "x")
				runGit(t, dir, "", "add", "-N", "later/intent.txt")
			}
			runGit(t, dir, "", "update-index", "--index-version", fmt.Sprint(v))
			want := strings.Split(strings.TrimSuffix(runGit(t, dir, "", "ls-files", "-z"), "\x00"), "\x00")
			slices.Sort(want)
			data := readIndex(t, dir)
			if got := binary.BigEndian.Uint32(data[4:8]); got != uint32(v) {
				t.Fatalf("git wrote index version %d, want %d", got, v)
			}
			got, err := parseGitIndex(data)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("index paths\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestGitIndexRefusals: what the parser cannot read faithfully is refused
// with a reason, and the radar carries on without git facts. Split and
// sparse indexes are made by real git, by command and by configuration
// (core.splitIndex, index.sparse); for those, the remedy docs/radar.md
// gives makes git write an index the radar reads again, with every
// tracked path (those a sparse directory entry hid included).
func TestGitIndexRefusals(t *testing.T) {
	cases := []struct {
		name, want    string
		setup, remedy func(t *testing.T, dir string)
	}{
		{"split index", "split", func(t *testing.T, dir string) {
			runGit(t, dir, "", "update-index", "--split-index")
		}, func(t *testing.T, dir string) {
			runGit(t, dir, "", "update-index", "--no-split-index")
		}},
		{"split index by config", "split", func(t *testing.T, dir string) {
			runGit(t, dir, "", "config", "core.splitIndex", "true")
			write(t, dir, "other/c.txt", "c")
			runGit(t, dir, "", "add", "other/c.txt")
		}, func(t *testing.T, dir string) {
			runGit(t, dir, "", "config", "core.splitIndex", "false")
			runGit(t, dir, "", "update-index", "--no-split-index")
		}},
		{"sparse index", "sparse", func(t *testing.T, dir string) {
			runGit(t, dir, "", "commit", "-q", "-m", "one")
			runGit(t, dir, "", "sparse-checkout", "init", "--cone", "--sparse-index")
			runGit(t, dir, "", "sparse-checkout", "set", "keep")
		}, func(t *testing.T, dir string) {
			runGit(t, dir, "", "sparse-checkout", "disable")
		}},
		{"sparse index by config", "sparse", func(t *testing.T, dir string) {
			runGit(t, dir, "", "commit", "-q", "-m", "one")
			runGit(t, dir, "", "config", "index.sparse", "true")
			runGit(t, dir, "", "sparse-checkout", "set", "--cone", "keep")
		}, func(t *testing.T, dir string) {
			runGit(t, dir, "", "sparse-checkout", "set", "--no-sparse-index")
		}},
		{"version 5", "version 5", func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "index")
			data := readIndex(t, dir)
			binary.BigEndian.PutUint32(data[4:8], 5)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"bad checksum", "checksum", func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "index")
			data := readIndex(t, dir)
			data[len(data)-1] ^= 0xff
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gitEnv(t)
			dir := gitInit(t)
			write(t, dir, "keep/a.txt", "a")
			write(t, dir, "other/b.txt", "b")
			write(t, dir, ".env", "A=1")
			runGit(t, dir, "", "add", ".")
			tc.setup(t, dir)
			_, err := parseGitIndex(readIndex(t, dir))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parse error %v, want one saying %q", err, tc.want)
			}
			checkRefusedEverywhere(t, dir, tc.want)
			if tc.remedy == nil {
				return
			}
			tc.remedy(t, dir)
			got, err := parseGitIndex(readIndex(t, dir))
			want := strings.Split(strings.TrimSuffix(runGit(t, dir, "", "ls-files", "-z"), "\x00"), "\x00")
			slices.Sort(want)
			if err != nil || !slices.Equal(got, want) || !slices.Contains(got, "other/b.txt") {
				t.Fatalf("after the remedy: %v, paths %q, git ls-files %q", err, got, want)
			}
		})
	}
}

// checkRefusedEverywhere: with the index of dir refused, Classify and
// ClassifyPath give no git facts (a tracked .env keeps HIGH_RISK without
// CONSULT_HISTORY) and the summary states the refusal without counts.
func checkRefusedEverywhere(t *testing.T, dir, want string) {
	t.Helper()
	e := newEngine(t, Options{})
	root := openRoot(t, dir)
	d, err := e.Classify(root, ".env")
	if err != nil {
		t.Fatal(err)
	}
	dp, err := e.ClassifyPath(dir, ".env", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range []Metadata{d.Metadata, dp.Metadata} {
		if md.Git == nil || !strings.Contains(md.Git.NotRead, want) || md.Importance != HighRisk || md.SuggestedAction == ConsultHistory {
			t.Fatalf("descriptor with a refused index: git %+v, importance %s, action %s", md.Git, md.Importance, md.SuggestedAction)
		}
	}
	s, err := e.Summarize(context.Background(), root, ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Git == nil || !strings.Contains(s.Git.Refused, want) || s.Git.Tracked+s.Git.Untracked+s.Git.Ignored != 0 {
		t.Fatalf("summary git %+v, want a refusal saying %q and no counts", s.Git, want)
	}
	if !strings.Contains(s.Text(), "git: not read (") {
		t.Fatalf("summary text lacks the refusal:\n%s", s.Text())
	}
}

// ignorePatterns is the pool the generated .gitignore files draw from:
// base names, anchored paths, directory-only lines, "**", classes,
// negations (some re-including under an excluded directory, which git
// refuses), escapes and trailing spaces.
var ignorePatterns = []string{
	"*.log", "!keep.log", "build/", "/a", "b/*", "**/c", "a/**/x.txt", "!b", "*.tmp", "c/", "!/c/keep.txt",
	"\\!bang", "d?.txt", "[ab].dat", "!*.dat", "x.txt", "!x.txt", "deep/", "!deep/", "b", "/b/x.txt",
	"# comment", "", "keep.txt ", "*", "!*/", "!a.txt", "**/build/**", "a/", "e\\ f", "!c/x.txt",
}

var treeNames = []string{"a", "b", "c", "build", "deep", "x.txt", "keep.log", "app.log", "a.dat", "d1.txt",
	"keep.txt", "!bang", "e f", "a.txt", "n.tmp"}

// genRepo writes a random tree with .gitignore files at random levels, an
// info/exclude file and a global excludes file named by ~/.gitconfig, and
// returns every path in it (files and directories, outside .git).
func genRepo(t *testing.T, rng *rand.Rand, dir, home string) []string {
	t.Helper()
	var paths []string
	var fill func(rel string, depth int)
	fill = func(rel string, depth int) {
		for _, n := range treeNames {
			if rng.Intn(3) != 0 {
				continue
			}
			p := n
			if rel != "" {
				p = rel + "/" + n
			}
			paths = append(paths, p)
			if depth < 3 && rng.Intn(2) == 0 {
				fill(p, depth+1)
				if rng.Intn(3) == 0 {
					write(t, dir, p+"/.gitignore", randomIgnore(rng))
				}
				continue
			}
			write(t, dir, p, "x")
		}
	}
	fill("", 0)
	write(t, dir, ".gitignore", randomIgnore(rng))
	write(t, dir, ".git/info/exclude", randomIgnore(rng))
	global := filepath.Join(home, "global-ignore")
	write(t, home, "global-ignore", randomIgnore(rng))
	write(t, home, ".gitconfig", "[user]\n\tname = t\n[core]\n\texcludesFile = "+global+"\n")
	return paths
}

func isDirPath(dir, rel string) bool {
	fi, err := os.Lstat(filepath.Join(dir, rel))
	return err == nil && fi.IsDir()
}

func randomIgnore(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.Intn(6); n >= 0; n-- {
		b.WriteString(ignorePatterns[rng.Intn(len(ignorePatterns))])
		b.WriteByte('\n')
	}
	return b.String()
}

// checkIgnore asks git which paths its ignore rules exclude, ignoring the
// index, with the deciding source and line of each.
func checkIgnore(t *testing.T, dir, home string, paths []string) map[string]string {
	t.Helper()
	out := runGit(t, dir, strings.Join(paths, "\x00")+"\x00", "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	f := strings.Split(out, "\x00")
	got := map[string]string{}
	for i := 0; i+3 < len(f); i += 4 {
		src, line, pat, p := f[i], f[i+1], f[i+2], f[i+3]
		if src == "" || strings.HasPrefix(pat, "!") {
			continue
		}
		if src == filepath.Join(home, "global-ignore") {
			src = "core.excludesFile"
		}
		got[p] = src + ":" + line
	}
	return got
}

// TestGitIgnoreAgreesWithCheckIgnore compares the radar's ignore verdicts,
// and the deciding file and line, with git check-ignore --no-index on
// generated repositories: nested .gitignore files, negations,
// .git/info/exclude and a global excludes file named by ~/.gitconfig.
func TestGitIgnoreAgreesWithCheckIgnore(t *testing.T) {
	for seed := int64(1); seed <= 25; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			home := gitEnv(t)
			dir := gitInit(t)
			paths := genRepo(t, rand.New(rand.NewSource(seed)), dir, home)
			want := checkIgnore(t, dir, home, paths)
			e := newEngine(t, Options{})
			root := openRoot(t, dir)
			r := e.gitRepo(root, rootKey(root))
			if r == nil || r.refused != "" {
				t.Fatalf("no git facts: %+v", r)
			}
			for _, p := range paths {
				ex, h := r.ign.ignored(root, p, isDirPath(dir, p))
				got := ""
				if ex {
					got = h.list.source + ":" + fmt.Sprint(h.line+1)
				}
				if got != want[p] {
					t.Errorf("%s: radar says %q, git check-ignore says %q", p, got, want[p])
				}
			}
		})
	}
}

// TestGitSummaryCountsAgreeWithGit compares the summary's git counts
// (which keep each directory's facts while its files are counted) with
// git on generated repositories: tracked is what git ls-files lists
// (ignored files added with -f among them), ignored what git check-ignore
// --no-index excludes among the rest. Every file's count also agrees with
// its descriptor's git facts, counted in walk order and backwards.
func TestGitSummaryCountsAgreeWithGit(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			home := gitEnv(t)
			dir := gitInit(t)
			rng := rand.New(rand.NewSource(seed))
			genRepo(t, rng, dir, home)
			files := repoFiles(t, dir)
			var add []string
			for _, f := range files {
				if rng.Intn(3) == 0 {
					add = append(add, f)
				}
			}
			if len(add) > 0 {
				runGit(t, dir, strings.Join(add, "\x00")+"\x00", "add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul")
			}
			tracked := map[string]bool{}
			for _, f := range strings.Split(runGit(t, dir, "", "ls-files", "-z"), "\x00") {
				tracked[f] = f != ""
			}
			ignored := checkIgnore(t, dir, home, files)
			var want SummaryGit
			for _, f := range files {
				switch {
				case tracked[f]:
					want.Tracked++
				case ignored[f] != "":
					want.Ignored++
				default:
					want.Untracked++
				}
			}
			e := newEngine(t, Options{})
			root := openRoot(t, dir)
			s, err := e.Summarize(context.Background(), root, ".", SummaryLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Git == nil || s.Git.Tracked != want.Tracked || s.Git.Untracked != want.Untracked || s.Git.Ignored != want.Ignored {
				t.Fatalf("summary git %+v, git says %+v", s.Git, want)
			}
			// In walk order, then backwards (the counter's cursors must
			// not depend on the order).
			r := e.gitRepo(root, rootKey(root))
			for _, order := range []string{"walk", "backwards"} {
				g := e.summaryGit(root, &Summary{})
				for i := range files {
					f := files[i]
					if order == "backwards" {
						f = files[len(files)-1-i]
					}
					f0 := r.facts(root, f, false)
					if g.count(f) != f0.Ignored || f0.Tracked != tracked[f] {
						t.Errorf("%s, %s order: count and facts %+v disagree (git: tracked %v)", f, order, f0, tracked[f])
					}
				}
			}
		})
	}
}

// repoFiles lists the regular files under dir outside .git, sorted, as
// slash-separated relative paths.
func repoFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".git":
			return fs.SkipDir
		case d.Type().IsRegular():
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// smallRepo makes a repository with .gitignore (*.out, .env.local), .env,
// .env.local, run.out, a Go file at goFile and notes.txt; .gitignore, .env
// and the Go file are tracked.
func smallRepo(t *testing.T, goFile string) string {
	t.Helper()
	gitEnv(t)
	dir := gitInit(t)
	write(t, dir, ".gitignore", "*.out\n.env.local\n")
	write(t, dir, ".env", "A=1\n")
	write(t, dir, ".env.local", "A=1\n")
	write(t, dir, "run.out", "x\n")
	write(t, dir, goFile, "package main\n")
	write(t, dir, "notes.txt", "hi\n")
	runGit(t, dir, "", "add", ".gitignore", ".env", goFile)
	return dir
}

// TestGitDescriptorsAndSummary: a tracked .env keeps HIGH_RISK and
// suggests CONSULT_HISTORY; an ignored file no rule marks is IGNORABLE
// with git's reason; an ignored .env stays HIGH_RISK; the summary counts
// tracked, untracked and ignored files; a second (cached) read says the
// same, and a git add is seen without the file changing.
func TestGitDescriptorsAndSummary(t *testing.T) {
	dir := smallRepo(t, "main.go")
	e := newEngine(t, Options{})
	root := openRoot(t, dir)
	cases := []struct {
		rel     string
		git     GitFacts
		imp     Importance
		action  Action
		because string
	}{
		{".env", GitFacts{Repo: ".", Tracked: true}, HighRisk, ConsultHistory, "tracked by git"},
		{".env.local", GitFacts{Repo: ".", Ignored: true, IgnoredBy: ".gitignore:2: .env.local"}, HighRisk, "", ""},
		{"run.out", GitFacts{Repo: ".", Ignored: true, IgnoredBy: ".gitignore:1: *.out"}, Ignorable, SafeToIgnore, "ignored by git (.gitignore:1: *.out)"},
		{"main.go", GitFacts{Repo: ".", Tracked: true}, Normal, "", ""},
		{"notes.txt", GitFacts{Repo: "."}, Normal, "", ""},
	}
	for _, tc := range cases {
		t.Run(caseName(tc.rel), func(t *testing.T) {
			for read := 1; read <= 2; read++ {
				d, err := e.Classify(root, tc.rel)
				if err != nil {
					t.Fatal(err)
				}
				md := d.Metadata
				if md.Git == nil || *md.Git != tc.git || md.Importance != tc.imp ||
					(tc.action != "" && md.SuggestedAction != tc.action) {
					t.Fatalf("read %d: git %+v importance %s action %s, want %+v %s %s", read, md.Git, md.Importance, md.SuggestedAction, tc.git, tc.imp, tc.action)
				}
				if tc.because != "" && !slices.ContainsFunc(md.Reasons, func(r string) bool { return strings.HasPrefix(r, tc.because) }) {
					t.Fatalf("read %d: reasons %q lack %q", read, md.Reasons, tc.because)
				}
			}
		})
	}
	s, err := e.Summarize(context.Background(), root, ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Git == nil || s.Git.Tracked != 3 || s.Git.Untracked != 1 || s.Git.Ignored != 2 || len(s.Git.Repos) != 1 || s.Git.Repos[0].Repo != "." {
		want := SummaryGit{Tracked: 3, Untracked: 1, Ignored: 2}
		t.Fatalf("summary git %+v, want %+v", s.Git, want)
	}
	// run.out is IGNORABLE in the counts, as in its descriptor.
	if s.Counts[Ignorable] != 1 {
		t.Fatalf("summary counts %v, want IGNORABLE 1 (run.out)", s.Counts)
	}
	if !strings.Contains(s.Text(), "\ngit: 3 tracked, 1 untracked, 2 ignored\n") {
		t.Fatalf("summary text lacks the git line:\n%s", s.Text())
	}
	runGit(t, dir, "", "add", "notes.txt")
	waitRecheck()
	d, err := e.Classify(root, "notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Git == nil || !d.Metadata.Git.Tracked {
		t.Fatalf("after git add, notes.txt: git %+v", d.Metadata.Git)
	}
}

// TestClassifyPathGivesGitFacts: ClassifyPath (rules, no content) carries
// the git facts Classify's descriptor has: a tracked .env suggests
// CONSULT_HISTORY, an ignored file no rule marks is IGNORABLE with git's
// reason, an ignored .env stays HIGH_RISK, a path that does not exist is
// answered by the ignore rules alone, and a directory holding tracked
// files is tracked. Each is asked twice (the second call reuses the held
// root and the cached repository).
func TestClassifyPathGivesGitFacts(t *testing.T) {
	dir := smallRepo(t, "src/main.go")
	e := newEngine(t, Options{})
	cases := []struct {
		rel     string
		isDir   bool
		git     GitFacts
		imp     Importance
		action  Action
		because string
	}{
		{".env", false, GitFacts{Repo: ".", Tracked: true}, HighRisk, ConsultHistory, "tracked by git"},
		{".env.local", false, GitFacts{Repo: ".", Ignored: true, IgnoredBy: ".gitignore:2: .env.local"}, HighRisk, ReadOnly, ""},
		{"run.out", false, GitFacts{Repo: ".", Ignored: true, IgnoredBy: ".gitignore:1: *.out"}, Ignorable, SafeToIgnore, "ignored by git (.gitignore:1: *.out)"},
		{"later.out", false, GitFacts{Repo: ".", Ignored: true, IgnoredBy: ".gitignore:1: *.out"}, Ignorable, SafeToIgnore, "ignored by git"},
		{"notes.txt", false, GitFacts{Repo: "."}, Normal, "", ""},
		{"src", true, GitFacts{Repo: ".", Tracked: true}, Normal, "", ""},
	}
	for _, tc := range cases {
		t.Run(caseName(tc.rel), func(t *testing.T) {
			for call := 1; call <= 2; call++ {
				d, err := e.ClassifyPath(dir, tc.rel, tc.isDir)
				if err != nil {
					t.Fatal(err)
				}
				md := d.Metadata
				if md.Git == nil || *md.Git != tc.git || md.Importance != tc.imp ||
					(tc.action != "" && md.SuggestedAction != tc.action) {
					t.Fatalf("call %d: git %+v importance %s action %s, want %+v %s %s", call, md.Git, md.Importance, md.SuggestedAction, tc.git, tc.imp, tc.action)
				}
				if tc.because != "" && !slices.ContainsFunc(md.Reasons, func(r string) bool { return strings.HasPrefix(r, tc.because) }) {
					t.Fatalf("call %d: reasons %q lack %q", call, md.Reasons, tc.because)
				}
			}
		})
	}
}

// TestClassifyPathFollowsAReplacedRoot: the root ClassifyPath holds open
// is re-checked; when its path comes to name another directory (a
// repository moved aside, a plain directory put in its place), the facts
// are the new directory's, and the old root is closed.
func TestClassifyPathFollowsAReplacedRoot(t *testing.T) {
	gitEnv(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "repo")
	runGit(t, parent, "", "init", "-q", "repo")
	write(t, dir, ".env", "A=1\n")
	runGit(t, dir, "", "add", ".env")
	e := newEngine(t, Options{})
	d, err := e.ClassifyPath(dir, ".env", false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Git == nil || !d.Metadata.Git.Tracked {
		t.Fatalf("before: git %+v", d.Metadata.Git)
	}
	old := e.heldRootsOf().roots[cleanKey(dir)]
	if err := os.Rename(dir, filepath.Join(parent, "aside")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".env", "A=1\n")
	waitRecheck()
	d, err = e.ClassifyPath(dir, ".env", false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Git != nil || d.Metadata.SuggestedAction == ConsultHistory {
		t.Fatalf("after the replacement: git %+v, action %s", d.Metadata.Git, d.Metadata.SuggestedAction)
	}
	if old == nil || !old.stale || old.users != 0 || e.heldRootsOf().roots[cleanKey(dir)] == old {
		t.Fatalf("the replaced root is still held: %+v", old)
	}
}

// TestClassifyPathConcurrentCallsShareTheHeldRoot: calls from several
// goroutines, across the root's re-check, all get the git facts, and no
// call is left holding the root afterwards (run with -race to check the
// held roots' locking).
func TestClassifyPathConcurrentCallsShareTheHeldRoot(t *testing.T) {
	gitEnv(t)
	dir := gitInit(t)
	write(t, dir, ".env", "A=1\n")
	runGit(t, dir, "", "add", ".env")
	e := newEngine(t, Options{})
	deadline := time.Now().Add(2*rootRecheck + 50*time.Millisecond)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for time.Now().Before(deadline) {
				d, err := e.ClassifyPath(dir, ".env", false)
				if err == nil && d.Metadata.SuggestedAction != ConsultHistory {
					err = fmt.Errorf("action %s, git %+v", d.Metadata.SuggestedAction, d.Metadata.Git)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	hs := e.heldRootsOf()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for k, h := range hs.roots {
		if h.users != 0 || h.stale {
			t.Fatalf("%s still held after the calls: %+v", k, h)
		}
	}
	if len(hs.roots) != 1 {
		t.Fatalf("%d roots held, want 1", len(hs.roots))
	}
}

func TestNoGitFactsOutsideARepository(t *testing.T) {
	gitEnv(t)
	dir := t.TempDir()
	write(t, dir, "run.out", "x")
	e := newEngine(t, Options{})
	root := openRoot(t, dir)
	d, err := e.Classify(root, "run.out")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Summarize(context.Background(), root, ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Git != nil || s.Git != nil {
		t.Fatalf("git facts outside a repository: %+v %+v", d.Metadata.Git, s.Git)
	}
}

// waitRecheck lets the engine's short-lived caches of a root expire.
func waitRecheck() { time.Sleep(rootRecheck + 50*time.Millisecond) }

// BenchmarkSummaryGitVsWalk is BenchmarkSummaryVsWalk on a 100,000-file
// git repository (index written by git add, a .gitignore at the top): the
// summary with git facts against a bare filepath.WalkDir (goal: at most
// 1.5). summary/walk compares wall-clock times, which other processes on
// a shared machine disturb; cpu-summary/cpu-walk compares the CPU time
// the process spent in each (where it can be read), the work itself.
func BenchmarkSummaryGitVsWalk(b *testing.B) {
	gitEnv(b)
	root := b.TempDir()
	genTree(b, root, 100_000, 7)
	write(b, root, ".gitignore", "*.log\nbuild/\n")
	runGit(b, root, "", "init", "-q")
	runGit(b, root, "", "add", ".")
	benchSummaryVsWalk(b, root, func(s *Summary) bool { return s.Git != nil && s.Git.Refused == "" && s.Git.Tracked > 0 })
}

// benchSummaryVsWalk times, alternating, a bare filepath.WalkDir of root
// and a summary of it, checks each summary with ok, and reports both
// times, their ratio and the ratio of the process's CPU time in each.
func benchSummaryVsWalk(b *testing.B, root string, ok func(*Summary) bool) {
	b.Helper()
	e := newEngine(b, Options{})
	r := openRoot(b, root)
	var walk, sum, cpuWalk, cpuSum time.Duration
	b.ResetTimer()
	for b.Loop() {
		c0, _ := processCPU()
		t0 := time.Now()
		if err := filepath.WalkDir(root, func(_ string, _ fs.DirEntry, err error) error { return err }); err != nil {
			b.Fatal(err)
		}
		c1, _ := processCPU()
		t1 := time.Now()
		s, err := e.Summarize(context.Background(), r, ".", SummaryLimits{})
		if err != nil {
			b.Fatal(err)
		}
		sum += time.Since(t1)
		walk += t1.Sub(t0)
		c2, _ := processCPU()
		cpuWalk, cpuSum = cpuWalk+c1-c0, cpuSum+c2-c1
		if !ok(s) {
			b.Fatalf("unexpected git counts: %+v", s.Git)
		}
	}
	b.ReportMetric(float64(walk.Milliseconds())/float64(b.N), "walk-ms/op")
	b.ReportMetric(float64(sum.Milliseconds())/float64(b.N), "summary-ms/op")
	b.ReportMetric(float64(sum)/float64(walk), "summary/walk")
	if _, ok := processCPU(); ok && cpuWalk > 0 {
		b.ReportMetric(float64(cpuSum)/float64(cpuWalk), "cpu-summary/cpu-walk")
	}
}

// TestGlobalExcludesFileFromUserConfig: core.excludesFile from the XDG
// config and ~/.gitconfig (the later wins), the XDG default, "~/"
// expansion, and what the small reader refuses (then no global file).
func TestGlobalExcludesFileFromUserConfig(t *testing.T) {
	cases := []struct {
		name, xdgConfig, gitconfig, want string
		ok                               bool
	}{
		{"default", "", "", "/h/xdg/git/ignore", true},
		{"gitconfig", "", "[core]\n\texcludesFile = /g/ign\n", "/g/ign", true},
		{"gitconfig wins over xdg", "[core]\nexcludesfile=/x/ign\n", "[Core]\n  ExcludesFile = \"/g/ign\" # c\n", "/g/ign", true},
		{"xdg alone", "[core]\nexcludesfile=/x/ign\n", "[user]\nname = x\n", "/x/ign", true},
		{"tilde", "", "[core]\nexcludesFile = ~/ign\n", "/h/ign", true},
		{"other section", "", "[corex]\nexcludesFile = /g/ign\n", "/h/xdg/git/ignore", true},
		{"include refused", "", "[include]\npath = /o\n[core]\nexcludesFile = /g/ign\n", "", false},
		{"escape refused", "", "[core]\nexcludesFile = /g\\tign\n", "", false},
		{"relative refused", "", "[core]\nexcludesFile = ign\n", "", false},
		{"no value refused", "", "[core]\nexcludesFile\n", "", false},
		{"continuation refused", "", "[core]\nexcludesFile = /g/\\\nign\n", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			xdg := filepath.Join(home, "xdg")
			if tc.xdgConfig != "" {
				write(t, xdg, "git/config", tc.xdgConfig)
			}
			if tc.gitconfig != "" {
				write(t, home, ".gitconfig", tc.gitconfig)
			}
			env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}
			got, ok := globalExcludesFile(func(k string) string { return env[k] })
			want := strings.ReplaceAll(tc.want, "/h/", home+"/")
			if got != want || ok != tc.ok {
				t.Fatalf("got %q %v, want %q %v", got, ok, want, tc.ok)
			}
		})
	}
}
