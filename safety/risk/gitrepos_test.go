package risk

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// codeRoot is a generated ~/code-style root: n repositories with random
// trees and ignore files (some committing node_modules, dist or vendor),
// a nested repository, a submodule made by git submodule add, a linked
// worktree made by git worktree add, and two repositories whose .git file
// points outside the root at FIFOs (which would block any open).
type codeRoot struct {
	dir, outside string
	repos        []string // root-relative tops whose git facts are read
	outsiders    []string // root-relative tops whose .git points outside
}

func makeCodeRoot(t *testing.T, home string, n int, seed int64) *codeRoot {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	base := t.TempDir()
	c := &codeRoot{dir: filepath.Join(base, "code"), outside: filepath.Join(base, "outside")}
	write(t, home, "global-ignore", "*.swp\n")
	write(t, home, ".gitconfig", "[core]\n\texcludesFile = "+filepath.Join(home, "global-ignore")+"\n")
	for i := range n {
		name := fmt.Sprintf("repo%02d", i)
		dir := filepath.Join(c.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		runGit(t, dir, "", "init", "-q")
		genRepo(t, rng, dir, home)
		write(t, home, ".gitconfig", "[core]\n\texcludesFile = "+filepath.Join(home, "global-ignore")+"\n")
		switch i % 4 {
		case 0: // commits its node_modules, as a JavaScript action does
			write(t, dir, "package.json", "{}\n")
			write(t, dir, "node_modules/dep/index.js", "module.exports = 1\n")
			write(t, dir, "node_modules/dep/.env", "TOKEN=abc123def456ghi\n")
			runGit(t, dir, "", "add", "-f", "package.json", "node_modules/dep/index.js")
		case 1: // dist committed despite an ignore rule; vendor committed
			write(t, dir, ".gitignore", "dist/\n")
			write(t, dir, "dist/app.js", "x\n")
			write(t, dir, "vendor/lib/lib.go", "package lib\n")
			runGit(t, dir, "", "add", "-f", "dist/app.js", "vendor/lib/lib.go")
		case 2: // a nested repository
			nested := filepath.Join(dir, "tools", "nested")
			if err := os.MkdirAll(nested, 0o755); err != nil {
				t.Fatal(err)
			}
			runGit(t, nested, "", "init", "-q")
			write(t, nested, ".gitignore", "*.out\nbuild/\n")
			write(t, nested, "a.out", "x")
			write(t, nested, "build/b.txt", "x")
			write(t, nested, "src/main.go", "package main\n")
			runGit(t, nested, "", "add", "-f", "src/main.go", ".gitignore")
			c.repos = append(c.repos, name+"/tools/nested")
		}
		var add []string
		for _, f := range repoFiles(t, dir) {
			if rng.Intn(3) == 0 && !strings.HasPrefix(f, "tools/nested/") {
				add = append(add, f)
			}
		}
		if len(add) > 0 {
			runGit(t, dir, strings.Join(add, "\x00")+"\x00", "add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul")
		}
		runGit(t, dir, "", "commit", "-q", "--allow-empty", "-m", "x")
		c.repos = append(c.repos, name)
	}
	// A submodule, cloned from a repository outside the root into
	// repo00/.git/modules/sub (inside it).
	src := filepath.Join(base, "subsrc")
	write(t, src, "lib.txt", "lib\n")
	write(t, src, ".gitignore", "*.log\n")
	runGit(t, src, "", "init", "-q")
	runGit(t, src, "", "add", "-f", ".")
	runGit(t, src, "", "commit", "-q", "-m", "x")
	runGit(t, filepath.Join(c.dir, "repo00"), "", "-c", "protocol.file.allow=always", "submodule", "add", "-f", "-q", src, "sub")
	write(t, c.dir, "repo00/sub/x.log", "x")
	write(t, c.dir, "repo00/sub/new.txt", "x")
	c.repos = append(c.repos, "repo00/sub")
	// A linked worktree of repo01 beside it.
	runGit(t, filepath.Join(c.dir, "repo01"), "", "worktree", "add", "-q", filepath.Join(c.dir, "wt"))
	write(t, c.dir, "wt/dist/new.js", "x")
	write(t, c.dir, "wt/untracked.txt", "x")
	c.repos = append(c.repos, "wt")
	// .git files pointing outside the root: at a FIFO, and at a directory
	// whose index and commondir are FIFOs.
	if err := os.MkdirAll(filepath.Join(c.outside, "gd"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fifo", "gd/index", "gd/commondir", "gd/HEAD"} {
		if err := syscall.Mkfifo(filepath.Join(c.outside, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(t, c.dir, "escape1/.git", "gitdir: "+filepath.Join(c.outside, "fifo")+"\n")
	write(t, c.dir, "escape1/secret.txt", "x")
	write(t, c.dir, "escape2/.git", "gitdir: ../../outside/gd\n")
	write(t, c.dir, "escape2/node_modules/x.js", "x")
	c.outsiders = []string{"escape1", "escape2"}
	write(t, c.dir, "loose.txt", "not in any repository")
	return c
}

// enclosing returns the nearest repository top enclosing rel (a strict
// ancestor holding a .git), "" for none, as the oracle sees it.
func (c *codeRoot) enclosing(rel string) string {
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(c.dir, d, ".git")); err == nil {
			return filepath.ToSlash(d)
		}
	}
	return ""
}

// allPaths lists every file and directory under the root outside .git
// directories and files, with whether it is a directory.
func (c *codeRoot) allPaths(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case d.Name() == ".git":
			if d.IsDir() {
				return fs.SkipDir
			}
		default:
			out[rel] = d.IsDir()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oracle is git's view of one repository's paths.
type oracle struct {
	tracked map[string]bool // files, and directories with a tracked path below
	ignored map[string]string
}

func gitOracle(t *testing.T, dir, home string, paths []string) oracle {
	t.Helper()
	o := oracle{tracked: map[string]bool{}}
	for _, f := range strings.Split(runGit(t, dir, "", "ls-files", "-z"), "\x00") {
		for f != "" && f != "." {
			o.tracked[f] = true
			f = filepath.ToSlash(filepath.Dir(f))
		}
	}
	o.ignored = checkIgnore(t, dir, home, paths)
	return o
}

// TestEveryRepositoryUnderARootAgreesWithGit compares the git facts of
// every path of a generated ~/code root (ClassifyPath and Classify), and
// the summary's per-repository counts, with git ls-files and git
// check-ignore --no-index run in the path's own repository. The .git
// files pointing outside the root give no facts, say so, and their FIFO
// targets are never opened (an open would block past the deadline).
func TestEveryRepositoryUnderARootAgreesWithGit(t *testing.T) {
	home := gitEnv(t)
	c := makeCodeRoot(t, home, 50, 7)
	paths := c.allPaths(t)
	byRepo := map[string][]string{}
	for p := range paths {
		r := c.enclosing(p)
		if r != "" {
			byRepo[r] = append(byRepo[r], strings.TrimPrefix(p, r+"/"))
		}
	}
	want := map[string]oracle{}
	for _, r := range c.repos {
		want[r] = gitOracle(t, filepath.Join(c.dir, r), home, byRepo[r])
	}
	e := newEngine(t, Options{})
	root := openRoot(t, c.dir)
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkCodeRoot(t, e, root, c, paths, want)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the radar blocked: it opened a FIFO outside the root")
	}
}

// checkCodeRoot runs on a goroutine of its own: it reports with t.Errorf
// only.
func checkCodeRoot(t *testing.T, e *Engine, root *jail.Root, c *codeRoot, paths map[string]bool, want map[string]oracle) {
	seen := map[string]int{} // tracked paths the radar saw, by repository
	defer func() {
		for _, r := range c.repos {
			if seen[r] == 0 {
				t.Errorf("repository %s: the radar saw no tracked path", r)
			}
		}
		t.Logf("%d paths, tracked by repository: %v", len(paths), seen)
	}()
	outside := map[string]bool{}
	for _, o := range c.outsiders {
		outside[o] = true
	}
	for p, isDir := range paths {
		d, err := e.ClassifyPath(c.dir, p, isDir)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		dc, err := e.Classify(root, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		repo := c.enclosing(p)
		for _, g := range []*GitFacts{d.Metadata.Git, dc.Metadata.Git} {
			switch {
			case repo == "":
				if g != nil {
					t.Errorf("%s: no repository encloses it, got git %+v", p, g)
				}
			case outside[repo]:
				if g == nil || g.NotRead == "" || !strings.Contains(g.NotRead, "outside the roots") || g.Tracked || g.Ignored {
					t.Errorf("%s: its .git points outside the root, got git %+v", p, g)
				}
			default:
				sub := strings.TrimPrefix(p, repo+"/")
				o := want[repo]
				ign := !o.tracked[sub] && o.ignored[sub] != ""
				if g == nil || g.Repo != repo || g.NotRead != "" || g.Tracked != o.tracked[sub] || g.Ignored != ign {
					t.Errorf("%s: radar says %+v; git in %s says tracked %v, ignored %v (%s)", p, g, repo, o.tracked[sub], ign, o.ignored[sub])
					continue
				}
				if g.Tracked {
					seen[repo]++
				}
				if ign && !sameSource(g.IgnoredBy, o.ignored[sub]) {
					t.Errorf("%s: ignored by %q, git says %q", p, g.IgnoredBy, o.ignored[sub])
				}
			}
		}
	}
	// The summary counts every file by its own repository.
	s, err := e.Summarize(context.Background(), root, ".", SummaryLimits{})
	if err != nil {
		t.Error(err)
		return
	}
	wantRepo := map[string]*SummaryRepo{}
	for p, isDir := range paths {
		repo := c.enclosing(p)
		if isDir || repo == "" {
			continue
		}
		r := wantRepo[repo]
		if r == nil {
			r = &SummaryRepo{Repo: repo}
			wantRepo[repo] = r
		}
		sub := strings.TrimPrefix(p, repo+"/")
		switch o := want[repo]; {
		case outside[repo]:
			r.Unread++
		case o.tracked[sub]:
			r.Tracked++
		case o.ignored[sub] != "":
			r.Ignored++
		default:
			r.Untracked++
		}
	}
	if s.Git == nil || len(s.Git.Repos) != len(wantRepo) {
		t.Errorf("summary git %+v, want %d repositories", s.Git, len(wantRepo))
		return
	}
	for _, got := range s.Git.Repos {
		w := wantRepo[got.Repo]
		if w == nil || got.Tracked != w.Tracked || got.Untracked != w.Untracked || got.Ignored != w.Ignored || got.Unread != w.Unread {
			t.Errorf("summary of %s: %+v, git says %+v", got.Repo, got, w)
		}
	}
	if !strings.Contains(s.Text(), "repositories") || !strings.Contains(s.Text(), "escape1: not read (") {
		t.Errorf("summary text lacks the repositories:\n%s", s.Text())
	}
}

// sameSource compares the radar's deciding line ("sub/.gitignore:3: x")
// with git's ("sub/.gitignore:3"): a .gitignore by path and line, an
// exclude file or the global file by line.
func sameSource(radar, git string) bool {
	src, line, _ := strings.Cut(git, ":")
	switch {
	case strings.HasSuffix(src, "info/exclude"):
		src = ".git/info/exclude"
	case src != "core.excludesFile" && !strings.HasSuffix(src, ".gitignore"):
		return false
	}
	return strings.HasPrefix(radar, src+":"+line+":")
}

// BenchmarkSummaryReposVsWalk is BenchmarkSummaryGitVsWalk on a ~/code
// root of 200 repositories of 500 files each (100,000 files; each index
// written by git add, a .gitignore at each top): the summary, counting
// every file by its own repository, against a bare filepath.WalkDir (goal:
// at most 1.5). Each index is read at most once per summary.
func BenchmarkSummaryReposVsWalk(b *testing.B) {
	gitEnv(b)
	root := b.TempDir()
	for i := range 200 {
		dir := filepath.Join(root, fmt.Sprintf("repo%03d", i))
		genTree(b, dir, 500, i)
		write(b, dir, ".gitignore", "*.log\nbuild/\n")
		runGit(b, dir, "", "init", "-q")
		runGit(b, dir, "", "add", ".")
	}
	benchSummaryVsWalk(b, root, func(s *Summary) bool { return s.Git != nil && len(s.Git.Repos) == 200 && s.Git.Tracked > 0 })
}
