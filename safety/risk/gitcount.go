package risk

import (
	"sort"
	"strings"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// gitCounter counts a summary's files by their git facts, each file by
// its nearest enclosing repository (a gitFrame). A walk counts a
// directory's files in name order, depth first, so each frame keeps what
// holds for the directories on the way down (dirs, outermost first): a
// file then costs a step forward in its directory's tracked paths and one
// match per ignore file that applies, not a search of the whole index and
// a climb to the top. Which repository a directory belongs to is kept on a
// stack of the directories on the way down (memory bounded by the depth);
// the walk says which directories hold a .git (note), so a directory costs
// no extra system call.
type gitCounter struct {
	e     *Engine
	root  *jail.Root
	key   string
	s     *Summary
	max   int                  // MaxListed: tracked files listed
	repos map[string]*gitFrame // by top: one frame per repository met
	stack []dirFrame           // the directories on the way down, outermost first
}

// dirFrame is one directory on the way down and the repository its
// entries belong to (nil: none).
type dirFrame struct {
	dir   string
	frame *gitFrame
}

// gitFrame is one repository met by a summary, with its counts.
type gitFrame struct {
	repo *gitRepo
	at   int // its SummaryRepo in Summary.Git.Repos
	dirs []*gitDirFacts
}

// gitDirFacts is what the repository's git files say about the entries of
// one directory.
type gitDirFacts struct {
	dir     string   // relative to the repository's top; "" for the top
	tracked []string // the tracked paths under dir, each starting with its prefix
	skip    int      // the length of that prefix: len(dir)+1, or 0 at the top
	next    int      // where the search for the next name starts in tracked
	ign     ignoreScope
}

// summaryGit prepares the git counts of a summary of root.
func (e *Engine) summaryGit(root *jail.Root, s *Summary) *gitCounter {
	return &gitCounter{e: e, root: root, key: rootKey(root), s: s, max: 50, repos: map[string]*gitFrame{}}
}

// isUnder reports whether dir is d or below it ("" is the root).
func isUnder(dir, d string) bool {
	return d == "" || dir == d || len(dir) > len(d) && dir[len(d)] == '/' && dir[:len(d)] == d
}

// climb leaves the directories on the stack that are not dir or its
// ancestors, and returns dir's entry when it is on top.
func (g *gitCounter) climb(dir string) (dirFrame, bool) {
	for n := len(g.stack); n > 0; n-- {
		top := g.stack[n-1]
		if top.dir == dir {
			return top, true
		}
		if isUnder(dir, top.dir) {
			break
		}
		g.stack = g.stack[:n-1]
	}
	return dirFrame{}, false
}

// note records that the walk entered dir (root-relative, "" for the
// root), which holds, or not, an entry named .git.
func (g *gitCounter) note(dir string, has bool) {
	if g == nil {
		return
	}
	if _, ok := g.climb(dir); ok {
		return
	}
	var f *gitFrame
	switch n := len(g.stack); {
	case has:
		if r := g.e.gitRepoAt(g.root, g.key, dir); r != nil {
			f = g.frame(r)
		} else if dir != "" {
			f = g.frameFor(parentOf(dir))
		}
	case n > 0 && g.stack[n-1].dir == parentOf(dir) && dir != "":
		f = g.stack[n-1].frame
	default:
		f = g.slowFrame(dir)
	}
	g.stack = append(g.stack, dirFrame{dir: dir, frame: f})
}

// frameFor returns the repository dir's entries belong to, or nil.
func (g *gitCounter) frameFor(dir string) *gitFrame {
	if top, ok := g.climb(dir); ok {
		return top.frame
	}
	f := g.slowFrame(dir)
	g.stack = append(g.stack, dirFrame{dir: dir, frame: f})
	return f
}

// slowFrame finds dir's repository by looking for a .git in dir and each
// of its ancestors (the start of a summary, or a call out of walk order).
func (g *gitCounter) slowFrame(dir string) *gitFrame {
	for d := dir; ; d = parentOf(d) {
		if r := g.e.gitRepoAt(g.root, g.key, d); r != nil {
			return g.frame(r)
		}
		if d == "" {
			return nil
		}
	}
}

// frame returns the frame counting the repository r, started on first use.
func (g *gitCounter) frame(r *gitRepo) *gitFrame {
	if f := g.repos[r.top]; f != nil {
		return f
	}
	if g.s.Git == nil {
		g.s.Git = &SummaryGit{}
	}
	g.s.Git.Repos = append(g.s.Git.Repos, SummaryRepo{Repo: r.name(), Refused: r.refused})
	if r.refused != "" && g.s.Git.Refused == "" {
		g.s.Git.Refused = r.refused
		if r.top != "" {
			g.s.Git.Refused = r.name() + ": " + r.refused
		}
	}
	f := &gitFrame{repo: r, at: len(g.s.Git.Repos) - 1}
	g.repos[r.top] = f
	return f
}

// repoCounts is f's share of the counts.
func (g *gitCounter) repoCounts(f *gitFrame) *SummaryRepo { return &g.s.Git.Repos[f.at] }

// count adds the file rel (root-relative) to the git counts and reports
// whether git ignores it. It answers as the repository's facts do, in any
// order of calls; in a walk's order it is cheapest.
func (g *gitCounter) count(rel string) (ignored bool) {
	if g == nil {
		return false
	}
	f := g.frameFor(parentOf(rel))
	if f == nil {
		return false
	}
	sub := f.repo.sub(rel)
	if inGitDir(sub) {
		return false
	}
	if f.repo.refused != "" {
		g.repoCounts(f).Unread++
		g.s.Git.Unread++
		return false
	}
	a := f.enter(g.root, parentOf(sub))
	switch {
	case a.isTracked(sub[a.skip:]):
		g.repoCounts(f).Tracked++
		g.s.Git.Tracked++
		if len(g.s.Git.TrackedFiles) < g.max {
			g.s.Git.TrackedFiles = append(g.s.Git.TrackedFiles, rel)
		} else {
			g.s.Git.TrackedOmitted++
		}
	case a.ign.ignores(sub, false) != nil:
		g.repoCounts(f).Ignored++
		g.s.Git.Ignored++
		return true
	default:
		g.repoCounts(f).Untracked++
		g.s.Git.Untracked++
	}
	return false
}

// enter returns the facts of dir, leaving the directories on the way
// down that are not dir's ancestors and adding dir.
func (g *gitFrame) enter(root *jail.Root, dir string) *gitDirFacts {
	for n := len(g.dirs); n > 0; n-- {
		top := g.dirs[n-1]
		if top.dir == dir {
			return top
		}
		if top.dir == "" || len(dir) > len(top.dir) && dir[len(top.dir)] == '/' && strings.HasPrefix(dir, top.dir) {
			break
		}
		g.dirs = g.dirs[:n-1]
	}
	tracked := g.repo.tracked
	if n := len(g.dirs); n > 0 {
		tracked = g.dirs[n-1].tracked // dir is under it: so are its paths
	}
	a := &gitDirFacts{dir: dir, tracked: tracked, ign: g.repo.ign.scope(root, dir)}
	if dir != "" {
		prefix := dir + "/"
		lo := sort.SearchStrings(tracked, prefix)
		n := sort.Search(len(tracked)-lo, func(i int) bool { return !strings.HasPrefix(tracked[lo+i], prefix) })
		a.tracked, a.skip = tracked[lo:lo+n], len(prefix)
	}
	g.dirs = append(g.dirs, a)
	return a
}

// isTracked reports whether the entry name of the directory is tracked.
// Names asked in ascending order cost a step or a few forward from the
// last one (a galloping search); a name out of order is searched for
// afresh.
func (a *gitDirFacts) isTracked(name string) bool {
	at := func(i int) string { return a.tracked[i][a.skip:] }
	lo := a.next
	if lo > 0 && at(lo-1) >= name {
		lo = 0
	}
	hi, step := lo, 1
	for hi < len(a.tracked) && at(hi) < name {
		lo, hi, step = hi+1, hi+step, step*2
	}
	hi = min(hi, len(a.tracked))
	i := lo + sort.Search(hi-lo, func(k int) bool { return at(lo+k) >= name })
	a.next = i
	return i < len(a.tracked) && at(i) == name
}
