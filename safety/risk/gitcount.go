package risk

import (
	"sort"
	"strings"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// gitCounter counts a summary's files by their git facts. A walk counts a
// directory's files in name order, depth first, so the counter keeps what
// holds for the directories on the way down (dirs, outermost first): a
// file then costs a step forward in its directory's tracked paths and one
// match per ignore file that applies, not a search of the whole index and
// a climb to the top.
type gitCounter struct {
	root *jail.Root
	repo *gitRepo
	out  *SummaryGit
	dirs []*gitDirFacts
}

// gitDirFacts is what the repository's git files say about the entries of
// one directory.
type gitDirFacts struct {
	dir     string   // "" for the top
	tracked []string // the tracked paths under dir, each starting with its prefix
	skip    int      // the length of that prefix: len(dir)+1, or 0 at the top
	next    int      // where the search for the next name starts in tracked
	ign     ignoreScope
}

// summaryGit prepares the git counts of a summary of root, or returns nil
// when the root is not a repository's top. A refused index is reported in
// s.Git without counts.
func (e *Engine) summaryGit(root *jail.Root, s *Summary) *gitCounter {
	r := e.gitRepo(root, rootKey(root))
	if r == nil {
		return nil
	}
	s.Git = &SummaryGit{Refused: r.refused}
	if r.refused != "" {
		return nil
	}
	return &gitCounter{root: root, repo: r, out: s.Git}
}

// count adds the file rel to the git counts and reports whether git
// ignores it. It answers as r.facts(root, rel, false) does, in any order
// of calls; in a walk's order it is cheapest.
func (g *gitCounter) count(rel string) (ignored bool) {
	if g == nil || inGitDir(rel) {
		return false
	}
	a := g.enter(parentOf(rel))
	switch {
	case a.isTracked(rel[a.skip:]):
		g.out.Tracked++
	case a.ign.ignores(rel, false) != nil:
		g.out.Ignored++
		return true
	default:
		g.out.Untracked++
	}
	return false
}

// enter returns the facts of dir, leaving the directories on the way
// down that are not dir's ancestors and adding dir.
func (g *gitCounter) enter(dir string) *gitDirFacts {
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
	a := &gitDirFacts{dir: dir, tracked: tracked, ign: g.repo.ign.scope(g.root, dir)}
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
