package risk

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/risk/gitignore"
)

// maxGitignoreBytes bounds one ignore file the radar reads; a bigger one is
// skipped.
const maxGitignoreBytes = 4 << 20

// ignoreList is one ignore file, compiled, with its lines for reasons.
type ignoreList struct {
	source string // ".gitignore", "sub/.gitignore", ".git/info/exclude", "core.excludesFile"
	base   string // the directory its patterns are relative to ("" for the top)
	m      *gitignore.Matcher
	lines  []string
}

// ignoreHit is the line that decided a path.
type ignoreHit struct {
	list    *ignoreList
	line    int
	negated bool
}

func (h *ignoreHit) String() string {
	return h.list.source + ":" + itoa(h.line+1) + ": " + strings.TrimSuffix(h.list.lines[h.line], "\r")
}

// gitDir is what the ignore rules say about one directory and its
// entries: the ignore sources that apply to its entries, or the line
// excluding it or an ancestor (then git reads no .gitignore inside it).
type gitDir struct {
	scope ignoreScope
}

// ignoreStack applies a repository's ignore sources as git does: for a
// path, the .gitignore files of its directories, deepest first, then
// .git/info/exclude, then the global excludes file; the first file with a
// matching line decides, by its last matching line; and nothing under an
// excluded directory is re-included. Directories' answers are memoised.
type ignoreStack struct {
	top    string // the repository's top, root-relative ("" for the root)
	info   *ignoreList
	global *ignoreList
	mu     sync.Mutex
	dirs   map[string]*gitDir
}

// newIgnoreStack reads the info/exclude of the repository at top (its
// common git directory is common, root-relative); the .gitignore files are
// read as directories are asked about, relative to top.
func newIgnoreStack(root *jail.Root, top, common string, global *ignoreList) *ignoreStack {
	s := &ignoreStack{top: top, global: global, dirs: map[string]*gitDir{}}
	s.info = readIgnoreFile(root, common+"/info/exclude", ".git/info/exclude", "")
	return s
}

// readIgnoreFile reads rel under root through jail (no symbolic link, a
// regular file only); nil when it is missing, unreadable, too big or holds
// a line the matcher refuses.
func readIgnoreFile(root *jail.Root, rel, source, base string) *ignoreList {
	f, err := root.OpenFile(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	return compileIgnore(f, source, base)
}

func compileIgnore(r io.Reader, source, base string) *ignoreList {
	data, err := io.ReadAll(io.LimitReader(r, maxGitignoreBytes+1))
	if err != nil || len(data) > maxGitignoreBytes {
		return nil
	}
	lines := strings.Split(string(data), "\n")
	m, err := gitignore.Compile(lines)
	if err != nil {
		return nil
	}
	return &ignoreList{source: source, base: base, m: m, lines: lines}
}

// readGlobalIgnore reads the global excludes file by its host path; nil
// when there is none or it cannot be read.
func readGlobalIgnore(name string) *ignoreList {
	if name == "" {
		return nil
	}
	f, err := os.Open(filepath.Clean(name))
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	return compileIgnore(f, "core.excludesFile", "")
}

// dir returns the memoised answer for the directory d ("" for the top).
func (s *ignoreStack) dir(root *jail.Root, d string) *gitDir {
	s.mu.Lock()
	g, ok := s.dirs[d]
	s.mu.Unlock()
	if ok {
		return g
	}
	g = &gitDir{}
	var tail []*ignoreList
	if d == "" {
		for _, l := range []*ignoreList{s.info, s.global} {
			if l != nil {
				tail = append(tail, l)
			}
		}
	} else {
		parent := s.dir(root, parentOf(d))
		tail = parent.scope.lists
		if parent.scope.excludedBy != nil {
			g.scope.excludedBy = parent.scope.excludedBy
		} else if h := parent.scope.decide(d, true); h != nil && !h.negated {
			g.scope.excludedBy = h
		}
	}
	if g.scope.excludedBy == nil {
		name := ".gitignore"
		if d != "" {
			name = d + "/.gitignore"
		}
		g.scope.lists = tail
		if l := readIgnoreFile(root, joinRel(s.top, name), name, d); l != nil {
			g.scope.lists = append([]*ignoreList{l}, tail...)
		}
	}
	memoPut(&s.mu, s.dirs, d, g)
	return g
}

// ignoreScope is the ignore sources that apply to the entries of one
// directory, in git's order: the directory's and its ancestors'
// .gitignore files (deepest first), then info/exclude and the global
// file; or, when the directory or an ancestor is excluded, that line.
type ignoreScope struct {
	excludedBy *ignoreHit
	lists      []*ignoreList
}

// scope returns the ignore sources applying to the entries of the
// directory d ("" for the top).
func (s *ignoreStack) scope(root *jail.Root, d string) ignoreScope {
	return s.dir(root, d).scope
}

// decide finds the line deciding p, an entry of the scope's directory:
// the first source with a matching line decides, by its last matching
// line. It returns nil when no line matches.
func (sc *ignoreScope) decide(p string, isDir bool) *ignoreHit {
	for _, l := range sc.lists {
		sub := p
		if l.base != "" {
			sub = p[len(l.base)+1:]
		}
		if matched, negated, line := l.m.MatchSelf(sub, isDir); matched {
			return &ignoreHit{list: l, line: line, negated: negated}
		}
	}
	return nil
}

// ignores returns the line excluding p, an entry of the scope's
// directory, or nil when git's ignore rules do not exclude it.
func (sc *ignoreScope) ignores(p string, isDir bool) *ignoreHit {
	if sc.excludedBy != nil {
		return sc.excludedBy
	}
	if h := sc.decide(p, isDir); h != nil && !h.negated {
		return h
	}
	return nil
}

// ignored reports whether git's ignore rules exclude p (clean, relative to
// the repository's top, not "."), and the deciding line.
func (s *ignoreStack) ignored(root *jail.Root, p string, isDir bool) (bool, *ignoreHit) {
	sc := s.scope(root, parentOf(p))
	h := sc.ignores(p, isDir)
	return h != nil, h
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
