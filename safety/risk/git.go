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
// without running git: the index (.git/index) says whether it is tracked,
// the ignore files (.gitignore at every level, .git/info/exclude, the
// user's global excludes file) whether git ignores it. A tracked path is
// never ignored, as in git.
type GitFacts struct {
	Tracked bool `json:"tracked"`
	Ignored bool `json:"ignored"`
	// IgnoredBy names the deciding line, "<file>:<line>: <pattern>", when
	// Ignored.
	IgnoredBy string `json:"ignored_by"`
}

// SummaryGit counts a summary's files by what git says of them. Refused,
// when set, says why the repository's git files were not read (no counts
// are given then).
type SummaryGit struct {
	Tracked   int    `json:"tracked"`
	Untracked int    `json:"untracked"`
	Ignored   int    `json:"ignored"`
	Refused   string `json:"refused,omitempty"`
}

// gitRepo is one root's git files, read: the tracked paths (sorted) under
// the index file's stamp, and the ignore rules.
type gitRepo struct {
	checked    time.Time
	indexStamp stamp
	tracked    []string
	refused    string
	ign        *ignoreStack
	none       bool // no .git at the root's top (remembered for rootRecheck)
}

// gitCache holds each root's gitRepo, and the roots ClassifyPath opened by
// path (gitpath.go); the zero value is ready.
type gitCache struct {
	mu    sync.Mutex
	repos map[string]*gitRepo

	heldOnce sync.Once
	held     *heldRoots
}

// gitRepo returns the git files of the root known by key, or nil when the
// root has no .git directory at its top. The index is re-read only when
// its stamp (identity, size, modification time) changes; the ignore files
// are re-read after rootRecheck.
func (e *Engine) gitRepo(root *jail.Root, key string) *gitRepo {
	c := &e.git
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	old := c.repos[key]
	if old != nil && now.Sub(old.checked) < rootRecheck {
		if old.none {
			return nil
		}
		return old
	}
	fi, err := root.Lstat(".git")
	r := &gitRepo{checked: now}
	switch {
	case err != nil:
		r.none = true
	case !fi.IsDir():
		r.refused = ".git is not a directory (a worktree or submodule link); its repository is not read"
	default:
		r.indexStamp = stampOf(root.Lstat(".git/index"))
		if old != nil && old.indexStamp == r.indexStamp && old.refused == "" {
			r.tracked = old.tracked
		} else {
			r.tracked, r.refused = readTracked(root, r.indexStamp)
			if r.refused != "" {
				e.log.Warn("git facts not used: the index was refused", "root", key, "reason", r.refused)
			}
		}
		name, ok := globalExcludesFile(os.Getenv)
		var global *ignoreList
		if ok {
			global = readGlobalIgnore(name)
		}
		r.ign = newIgnoreStack(root, global)
	}
	if c.repos == nil || len(c.repos) >= 64 {
		c.repos = map[string]*gitRepo{}
	}
	c.repos[key] = r
	if r.none {
		return nil
	}
	return r
}

// readTracked reads the index's paths; refused says why it could not.
func readTracked(root *jail.Root, st stamp) (paths []string, refused string) {
	if !st.exists {
		return nil, "" // a repository without an index tracks nothing yet
	}
	f, err := root.OpenFile(".git/index")
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

// facts answers for rel (clean, not "." and not under .git).
func (r *gitRepo) facts(root *jail.Root, rel string, isDir bool) GitFacts {
	f := GitFacts{Tracked: r.isTracked(rel, isDir)}
	if f.Tracked {
		return f
	}
	if ex, h := r.ign.ignored(root, rel, isDir); ex {
		f.Ignored, f.IgnoredBy = true, h.String()
	}
	return f
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
	if inGitDir(rel) {
		return
	}
	r := e.gitRepo(root, key)
	if r == nil || r.refused != "" {
		return
	}
	f := r.facts(root, rel, isDir)
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

// text is the summary's git line, "" when there is none.
func (g *SummaryGit) text() string {
	if g == nil {
		return ""
	}
	if g.Refused != "" {
		return "git: not read (" + g.Refused + ")\n"
	}
	return "git: " + commas(g.Tracked) + " tracked, " + commas(g.Untracked) + " untracked, " + commas(g.Ignored) + " ignored\n"
}
