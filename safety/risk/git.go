package risk

import (
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// GitFacts is what a repository's own git files say about a path, read
// without running git: the index says whether it is tracked, the ignore
// files (.gitignore at every level, the repository's info/exclude, the
// user's global excludes file) whether git ignores it. A tracked path is
// never ignored, as in git. The repository is the path's nearest
// enclosing one under the root: a directory holding a .git directory, or
// a .git file (a linked worktree, a submodule) whose gitdir lies inside
// the root.
type GitFacts struct {
	Tracked bool `json:"tracked"`
	Ignored bool `json:"ignored"`
	// IgnoredBy names the deciding line, "<file>:<line>: <pattern>", when
	// Ignored.
	IgnoredBy string `json:"ignored_by"`
	// Repo is the repository's top, relative to the root ("." for the
	// root itself).
	Repo string `json:"repo"`
	// NotRead, when set, says why the repository's git files were not
	// read (a gitdir outside the root, a refused index): Tracked and
	// Ignored then say nothing.
	NotRead string `json:"not_read,omitempty"`
}

// SummaryGit counts a summary's files by what git says of them. Refused,
// when set, says why a repository's git files were not read (the files of
// that repository are counted in Unread, not in the other counts).
type SummaryGit struct {
	Tracked   int    `json:"tracked"`
	Untracked int    `json:"untracked"`
	Ignored   int    `json:"ignored"`
	Refused   string `json:"refused,omitempty"`
	// Unread counts the files inside repositories whose git files were
	// not read: they may be tracked.
	Unread int `json:"unread,omitempty"`
	// Repos counts each repository's files, in the order the walk met
	// them.
	Repos []SummaryRepo `json:"repos,omitempty"`
	// TrackedFiles are the first tracked files met (at most MaxListed),
	// root-relative; TrackedOmitted counts the rest.
	TrackedFiles   []string `json:"tracked_files,omitempty"`
	TrackedOmitted int      `json:"tracked_omitted,omitempty"`
}

// SummaryRepo is one repository's share of a summary's files.
type SummaryRepo struct {
	// Repo is the repository's top, relative to the root ("." for the
	// root itself).
	Repo      string `json:"repo"`
	Tracked   int    `json:"tracked"`
	Untracked int    `json:"untracked"`
	Ignored   int    `json:"ignored"`
	// Refused says why this repository's git files were not read; its
	// files are then counted in Unread.
	Refused string `json:"refused,omitempty"`
	Unread  int    `json:"unread,omitempty"`
}

// gitRepo is one repository's git files, read: the tracked paths (sorted,
// relative to its top) under the index file's stamp, and the ignore rules.
type gitRepo struct {
	checked    time.Time
	top        string // root-relative top, "" for the root itself
	gitDir     string // root-relative: "<top>/.git", or where a .git file points
	indexStamp stamp
	tracked    []string
	refused    string
	ign        *ignoreStack
	none       bool // no .git at top (remembered for rootRecheck)
}

// name is the repository's top as reported: "." for the root.
func (r *gitRepo) name() string {
	if r.top == "" {
		return "."
	}
	return r.top
}

// gitCache holds each repository's gitRepo, by root and top, and the
// roots ClassifyPath opened by path (gitpath.go); the zero value is ready.
type gitCache struct {
	mu    sync.Mutex
	repos map[string]*gitRepo

	heldOnce sync.Once
	held     *heldRoots
}

// maxGitEntries bounds the memo of directories checked for a .git (a
// root of many repositories and deep trees); past it, it starts afresh.
const maxGitEntries = 8192

// gitRepo returns the git files of the repository at the root's top, or
// nil when there is none.
func (e *Engine) gitRepo(root *jail.Root, key string) *gitRepo {
	return e.gitRepoAt(root, key, "")
}

// repoFor returns the nearest repository enclosing rel (root-relative,
// clean), or nil: the first of rel's parent directories, upwards to the
// root's top, that holds a .git. A repository's top itself belongs to the
// repository above it, as an entry of that one.
func (e *Engine) repoFor(root *jail.Root, key, rel string) *gitRepo {
	if rel == "." || rel == "" {
		return nil
	}
	for d := parentOf(rel); ; d = parentOf(d) {
		if r := e.gitRepoAt(root, key, d); r != nil {
			return r
		}
		if d == "" {
			return nil
		}
	}
}

// gitRepoAt returns the git files of the repository whose top is the
// directory top ("" for the root), or nil when top holds no .git. The
// index is re-read only when its stamp (identity, size, modification time)
// changes; the ignore files are re-read after rootRecheck.
func (e *Engine) gitRepoAt(root *jail.Root, key, top string) *gitRepo {
	return e.gitRepoRead(root, key, top, false)
}

// gitRepoRead is gitRepoAt; fresh looks at the .git and the index's stamp
// again even within rootRecheck (a decision to delete must see a git add
// made a moment ago).
func (e *Engine) gitRepoRead(root *jail.Root, key, top string, fresh bool) *gitRepo {
	c := &e.git
	ck := key + "\x00" + top
	c.mu.Lock()
	now := time.Now()
	old := c.repos[ck]
	if old != nil && now.Sub(old.checked) < rootRecheck && !fresh {
		c.mu.Unlock()
		if old.none {
			return nil
		}
		return old
	}
	c.mu.Unlock()
	r := &gitRepo{checked: now, top: top}
	e.readRepo(root, key, r, old)
	c.mu.Lock()
	if c.repos == nil || len(c.repos) >= maxGitEntries {
		c.repos = map[string]*gitRepo{}
	}
	c.repos[ck] = r
	c.mu.Unlock()
	if r.none {
		return nil
	}
	return r
}

// readRepo fills r, the repository at r.top: where its git directory is,
// then its index (reused from old when its stamp is unchanged) and its
// ignore rules.
func (e *Engine) readRepo(root *jail.Root, key string, r *gitRepo, old *gitRepo) {
	gitDir, common, refused, none := locateGitDir(root, r.top)
	if none {
		r.none = true
		return
	}
	if refused != "" {
		r.refused = refused
		e.log.Warn("git facts not used: the repository was not read", "root", key, "repo", r.name(), "reason", refused)
		return
	}
	r.gitDir = gitDir
	index := gitDir + "/index"
	r.indexStamp = stampOf(root.Lstat(index))
	if old != nil && old.gitDir == gitDir && old.indexStamp == r.indexStamp && old.refused == "" && !old.none {
		r.tracked = old.tracked
	} else {
		r.tracked, r.refused = readTracked(root, index, r.indexStamp)
		if r.refused != "" {
			e.log.Warn("git facts not used: the index was refused", "root", key, "repo", r.name(), "reason", r.refused)
		}
	}
	name, ok := globalExcludesFile(os.Getenv)
	var global *ignoreList
	if ok {
		global = readGlobalIgnore(name)
	}
	r.ign = newIgnoreStack(root, r.top, common, global)
}

// readTracked reads the index's paths; refused says why it could not.
func readTracked(root *jail.Root, index string, st stamp) (paths []string, refused string) {
	if !st.exists {
		return nil, "" // a repository without an index tracks nothing yet
	}
	f, err := root.OpenFile(index)
	if err != nil {
		return nil, "the index file could not be opened"
	}
	defer f.Close()
	// One read into a buffer of the file's size: io.ReadAll's doubling
	// would copy and clear a big index many times over.
	fi, err := f.Stat()
	if err != nil {
		return nil, "the index file could not be read"
	}
	if fi.Size() > maxIndexBytes {
		return nil, "the index file is larger than 256 MiB"
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, "the index file could not be read"
	}
	paths, err = parseGitIndex(data)
	if err != nil {
		return nil, err.Error()
	}
	return paths, ""
}

// isTracked reports whether rel is in the index or, for a directory,
// whether anything under it is.
func (r *gitRepo) isTracked(rel string, isDir bool) bool {
	i := sort.SearchStrings(r.tracked, rel)
	if i < len(r.tracked) && r.tracked[i] == rel {
		return true
	}
	if !isDir {
		return false
	}
	j := sort.SearchStrings(r.tracked, rel+"/")
	return j < len(r.tracked) && strings.HasPrefix(r.tracked[j], rel+"/")
}

// facts answers for rel (clean, relative to the repository's top, not "."
// and not under .git).
func (r *gitRepo) facts(root *jail.Root, rel string, isDir bool) GitFacts {
	f := GitFacts{Tracked: r.isTracked(rel, isDir), Repo: r.name()}
	if f.Tracked {
		return f
	}
	if ex, h := r.ign.ignored(root, rel, isDir); ex {
		f.Ignored, f.IgnoredBy = true, h.String()
	}
	return f
}

// sub is rel (root-relative, under the repository's top) relative to the
// top.
func (r *gitRepo) sub(rel string) string {
	if r.top == "" {
		return rel
	}
	return rel[len(r.top)+1:]
}

// inGitDir reports paths git does not describe: the top and .git itself.
func inGitDir(rel string) bool {
	return rel == "." || rel == ".git" || strings.HasPrefix(rel, ".git/")
}

// withGit adds the repository's git facts to d, a descriptor of rel under
// root, and applies them: an ignored path no RISK or VALUE rule (nor the
// content scan) marks becomes IGNORABLE; a tracked path whose winning rule
// is a RISK rule suggests CONSULT_HISTORY. d must not be a cached copy.
func (e *Engine) withGit(root *jail.Root, key, rel string, isDir bool, d *Descriptor) {
	r := e.repoFor(root, key, rel)
	if r == nil {
		return
	}
	sub := r.sub(rel)
	if inGitDir(sub) {
		return
	}
	if r.refused != "" {
		d.Metadata.Git = &GitFacts{Repo: r.name(), NotRead: r.refused}
		return
	}
	f := r.facts(root, sub, isDir)
	d.Metadata.Git = &f
	applyGit(&d.Metadata, f)
}

func applyGit(md *Metadata, f GitFacts) {
	marked := md.Importance == HighRisk || md.Importance == HighValue
	for _, m := range md.MatchedRules {
		if m.Category == Risk || m.Category == Value {
			marked = true
		}
	}
	switch {
	case f.Ignored && !marked:
		md.Importance = Ignorable
		md.Category = string(Ignore)
		md.SuggestedAction = SafeToIgnore
		md.Reasons = append([]string{"ignored by git (" + f.IgnoredBy + ")"}, md.Reasons...)
	case f.Tracked && md.Category == string(Risk) && md.SuggestedAction != ConsultHistory:
		md.SuggestedAction = ConsultHistory
		md.Reasons = append(md.Reasons, "tracked by git: earlier versions stay in its history even after an edit or a delete; "+
			"consult the history (git log) before changing it")
	}
}

// text is the summary's git lines, "" when there are none: the counts of
// every repository read, then, when there are several, one line per
// repository; a repository not read says why.
func (g *SummaryGit) text() string {
	if g == nil {
		return ""
	}
	var b strings.Builder
	read := 0
	for _, r := range g.Repos {
		if r.Refused == "" {
			read++
		}
	}
	if read > 0 || len(g.Repos) == 0 {
		b.WriteString("git: " + commas(g.Tracked) + " tracked, " + commas(g.Untracked) + " untracked, " + commas(g.Ignored) + " ignored")
		if len(g.Repos) > 1 {
			b.WriteString(" in " + commas(len(g.Repos)) + " repositories")
		}
		b.WriteString("\n")
	}
	for _, r := range g.Repos {
		switch {
		case r.Refused != "" && len(g.Repos) == 1:
			b.WriteString("git: not read (" + r.Refused + ")\n")
		case r.Refused != "":
			b.WriteString("git: " + displayName(r.Repo) + ": not read (" + r.Refused + "), " + commas(r.Unread) + " files\n")
		case len(g.Repos) > 1:
			b.WriteString("git: " + displayName(r.Repo) + ": " + commas(r.Tracked) + " tracked, " + commas(r.Untracked) + " untracked, " + commas(r.Ignored) + " ignored\n")
		}
	}
	return b.String()
}

// GitHold is what git says of everything beneath one directory, read at
// the moment of asking: how many paths the index of its repository lists
// under it, and which repository. NotRead says why the repository's git
// files were not read (then Tracked is unknown, not zero).
type GitHold struct {
	Tracked int
	Repo    string
	NotRead string
}

// TrackedUnder counts the paths the index lists beneath the directory rel
// (root-relative) in the repository that holds rel's entries: rel itself
// when it is a repository's top, else its nearest enclosing one. It reads
// the index (memoised by its stamp, as every git fact is) and no
// directory: repositories nested below rel are not counted (a summary of
// rel counts them). It looks at the .git files and the index's stamp
// afresh, so a git add made a moment ago is seen. ok is false when no
// repository holds rel.
func (e *Engine) TrackedUnder(root *jail.Root, rel string) (h GitHold, ok bool) {
	rel, err := CleanRel(rel)
	if err != nil || rel == "." {
		rel = ""
	}
	key := rootKey(root)
	for d := rel; ; d = parentOf(d) {
		r := e.gitRepoRead(root, key, d, true)
		if r != nil {
			h = GitHold{Repo: r.name(), NotRead: r.refused}
			if r.refused != "" {
				return h, true
			}
			prefix := ""
			if d != rel {
				prefix = r.sub(rel) + "/"
			}
			lo := sort.SearchStrings(r.tracked, prefix)
			n := sort.Search(len(r.tracked)-lo, func(i int) bool { return !strings.HasPrefix(r.tracked[lo+i], prefix) })
			h.Tracked = n
			return h, true
		}
		if d == "" {
			return GitHold{}, false
		}
	}
}
