package risk

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk/gitignore"
)

// ProjectFile is the project-local rule file read at the top of a root.
const ProjectFile = ".bastion-risk.toml"

// rootRecheck is how long a root's marker files and project rule file are
// trusted before they are looked at again ("directory listings may be
// cached briefly").
const rootRecheck = 250 * time.Millisecond

// Options configures an Engine.
type Options struct {
	// RuleFiles are operator rule files ([radar] rule_files), in order.
	// They must parse at startup; after that, a broken edit is logged and
	// the last good rules stay in force.
	RuleFiles []string
	// ScanBytes is how much of a file the content scanner reads; 0 means
	// DefaultScanBytes, a negative value turns the scanner off.
	ScanBytes int
	// Patterns are the operator's [redaction] patterns: the content
	// scanner looks for them besides the builtin secret patterns (the same
	// table terminald redacts output with), and reports a file holding a
	// match as HIGH_RISK. A pattern safety/redact refuses is an error.
	Patterns []redact.Extra
	// Logger receives reload outcomes and refusals; nil discards them.
	Logger *slog.Logger
	// OnReload, if set, is called after every hot-reload attempt with the
	// rule-set version then in force and the error (nil on success).
	OnReload func(version uint64, err error)
	// CacheEntries bounds the descriptor cache; 0 means 8192.
	CacheEntries int
	// SummaryMaxEntries is Summarize's entry cap when its SummaryLimits
	// set none ([radar] summary_max_entries); 0 means
	// DefaultSummaryMaxEntries.
	SummaryMaxEntries int
}

// Engine classifies paths. It is safe for concurrent use.
type Engine struct {
	opts    Options
	log     *slog.Logger
	builtin []*RuleSet
	secrets *redact.Set // the content scanner's secret patterns

	operator atomic.Pointer[[]*RuleSet]
	version  atomic.Uint64
	gen      atomic.Uint64
	reloadMu sync.Mutex

	mu    sync.Mutex
	roots map[string]*rootState

	cacheMu sync.Mutex
	cache   map[cacheKey]Descriptor

	git gitCache // each root's git files (git.go)
}

// NewEngine loads the built-in packs and the operator rule files. An
// operator file that is missing or invalid is an error: the server should
// refuse to start rather than run with rules the operator did not get.
func NewEngine(opts Options) (*Engine, error) {
	if opts.ScanBytes == 0 {
		opts.ScanBytes = DefaultScanBytes
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = 8192
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	builtin, err := builtinPacks()
	if err != nil {
		return nil, result.Wrap(result.InternalError, "the built-in risk rule packs are broken", err)
	}
	secrets := redact.Default()
	if len(opts.Patterns) > 0 {
		if secrets, err = redact.Compile(opts.Patterns); err != nil {
			return nil, err
		}
	}
	e := &Engine{opts: opts, log: log, builtin: builtin, secrets: secrets, roots: map[string]*rootState{}, cache: map[cacheKey]Descriptor{}}
	ops, err := loadOperatorFiles(opts.RuleFiles, log)
	if err != nil {
		return nil, err
	}
	e.operator.Store(&ops)
	e.version.Store(1)
	return e, nil
}

// loadOperatorFiles reads and parses every operator file; the first
// failure is returned. A rule refused alone is logged; the rest of its
// file applies.
func loadOperatorFiles(files []string, log *slog.Logger) ([]*RuleSet, error) {
	var sets []*RuleSet
	for i, f := range files {
		src := "operator:" + filepath.Base(f)
		data, err := readLimited(f)
		if err != nil {
			code, why := result.Classify(err)
			return nil, result.Wrap(code, "rule file "+src+" could not be read: "+why, err)
		}
		rs, err := ParseRules(src, data)
		if err != nil {
			return nil, err
		}
		rs.tier, rs.order = 1, i
		for _, n := range rs.notes() {
			log.Warn("operator risk rule refused; the rest of the file applies", "file", src, "reason", n)
		}
		sets = append(sets, rs)
	}
	return sets, nil
}

func readLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRuleFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRuleFileBytes {
		return nil, result.New(result.InvalidRequest, "the file is larger than 1 MiB")
	}
	return data, nil
}

// Version is the rule-set version: it starts at 1 and grows by one at
// every successful reload of the operator rule files.
func (e *Engine) Version() uint64 { return e.version.Load() }

// Reload re-reads the operator rule files now. On error the rules in force
// are kept and the error says why.
func (e *Engine) Reload() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	sets, err := loadOperatorFiles(e.opts.RuleFiles, e.log)
	if err != nil {
		e.log.Warn("risk rules not reloaded; keeping the last good rules", "version", e.version.Load(), "reason", result.Reason(err))
		if e.opts.OnReload != nil {
			e.opts.OnReload(e.version.Load(), err)
		}
		return err
	}
	e.operator.Store(&sets)
	v := e.version.Add(1)
	e.log.Info("risk rules reloaded", "version", v, "files", len(sets))
	if e.opts.OnReload != nil {
		e.opts.OnReload(v, nil)
	}
	return nil
}

// flatMatcher is one (rule set, category) matcher of a root's rules.
type flatMatcher struct {
	set *RuleSet
	cat int
	m   *gitignore.Matcher
}

// stamp identifies a file's state for revalidation.
type stamp struct {
	exists     bool
	dev, ino   uint64
	size       int64
	mtime      int64
	isRegular  bool
	modeString string
}

func stampOf(fi jail.Info, err error) stamp {
	if err != nil {
		return stamp{}
	}
	return stamp{exists: true, dev: fi.ID.Dev, ino: fi.ID.Ino, size: fi.Size, mtime: fi.ModTime.UnixNano(),
		isRegular: fi.Mode.IsRegular(), modeString: fi.Mode.Type().String()}
}

// rootState is the rules in force at one root: the always-on packs, the
// packs whose markers exist there, the operator files and the root's
// project file.
type rootState struct {
	checked       time.Time
	globalVersion uint64
	rootStamp     stamp
	projStamp     stamp
	gen           uint64
	sets          []*RuleSet
	flat          []flatMatcher
	packs         []string
	projNotes     []string // what was refused in the project file (rules_refused.go)
	// set asks every flat matcher at once (same order as flat): one
	// look-up of a base name in an index shared by all of them.
	set *gitignore.Set

	// memo holds, per directory (slash-separated, relative to the root),
	// the line of each flat matcher that excludes the directory itself or
	// one of its ancestors (-1 when none does). A path's rule matches are
	// then its parent's answer plus one Set.Child (all matchers at once),
	// instead of re-matching every ancestor against every pattern. The
	// memo belongs to this rootState, so a rule change (a new rootState)
	// discards it.
	memoMu sync.RWMutex
	memo   map[string][]int32
}

// memoLimit bounds a rootState's directory memo; it is cleared when full.
const memoLimit = 1 << 16

// memoPut stores v under k in the memo m, guarded by l, first emptying m
// if it holds memoLimit entries.
func memoPut[V any](l sync.Locker, m map[string]V, k string, v V) {
	l.Lock()
	defer l.Unlock()
	if len(m) >= memoLimit {
		clear(m)
	}
	m[k] = v
}

// state returns the rules for the root known by key, opened by open
// (which may return a nil closer).
func (e *Engine) state(key string, open func() (*jail.Root, func(), error)) *rootState {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	gv := e.version.Load()
	st := e.roots[key]
	if st != nil && st.globalVersion == gv && now.Sub(st.checked) < rootRecheck {
		return st
	}
	root, closeRoot, err := open()
	var (
		rs, ps stamp
		top    *jail.Dir
	)
	if err == nil {
		if closeRoot != nil {
			defer closeRoot()
		}
		// A fresh stat through a fresh fd: the root's own Info is the one
		// taken when it was opened, and the root's mtime is what tells a
		// marker file appeared.
		top, err = root.OpenDir(".")
	}
	if err == nil {
		defer top.Close()
		rs = stampOf(top.Stat())
		ps = stampOf(top.Lstat(ProjectFile))
	}
	if st != nil && st.globalVersion == gv && st.rootStamp == rs && st.projStamp == ps {
		st.checked = now
		return st
	}
	st = &rootState{checked: now, globalVersion: gv, rootStamp: rs, projStamp: ps, gen: e.gen.Add(1),
		memo: map[string][]int32{}}
	var names []string
	if err == nil {
		names = rootNames(top)
	}
	ops := *e.operator.Load()
	for _, group := range [][]*RuleSet{e.builtin, ops} {
		for _, s := range group {
			if enabled(s.Info.Markers, names) {
				st.sets = append(st.sets, s)
				st.packs = append(st.packs, s.Source)
			}
		}
	}
	if err == nil && ps.exists {
		var proj *RuleSet
		if proj, st.projNotes = e.loadProject(root, ps); proj != nil {
			st.sets = append(st.sets, proj)
			st.packs = append(st.packs, proj.Source)
		}
	}
	for _, s := range st.sets {
		for k, m := range s.cats {
			if m != nil {
				st.flat = append(st.flat, flatMatcher{set: s, cat: k, m: m})
			}
		}
	}
	ms := make([]*gitignore.Matcher, len(st.flat))
	for j, fm := range st.flat {
		ms[j] = fm.m
	}
	st.set = gitignore.NewSet(ms...)
	if len(e.roots) >= 64 {
		clear(e.roots)
	}
	e.roots[key] = st
	return st
}

// loadProject reads the root's .bastion-risk.toml. A broken project file
// is logged and skipped: it can only add rules, so skipping it is the
// conservative answer. A rule refused alone is logged and the rest
// applies. The notes say what was refused, for the file's descriptor.
func (e *Engine) loadProject(root *jail.Root, ps stamp) (*RuleSet, []string) {
	src := "project:" + ProjectFile
	if !ps.isRegular {
		e.log.Warn("project risk rules skipped: not a regular file", "file", ProjectFile)
		return nil, nil
	}
	f, err := root.OpenFile(ProjectFile)
	if err != nil {
		e.log.Warn("project risk rules skipped: unreadable", "file", ProjectFile, "reason", result.Reason(err))
		return nil, []string{"this rule file is refused whole: " + result.Reason(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRuleFileBytes+1))
	if err == nil && len(data) > maxRuleFileBytes {
		err = result.New(result.InvalidRequest, "rule file "+src+" is larger than 1 MiB")
	}
	var rs *RuleSet
	if err == nil {
		rs, err = ParseRules(src, data)
	}
	if err != nil {
		e.log.Warn("project risk rules skipped", "file", ProjectFile, "reason", result.Reason(err))
		return nil, []string{"this rule file is refused whole: " + result.Reason(err)}
	}
	rs.tier = 2
	notes := rs.notes()
	for _, n := range notes {
		e.log.Warn("project risk rule refused; the rest of the file applies", "file", ProjectFile, "reason", n)
	}
	return rs, notes
}

// rootNames lists the names at the top of a root (for marker detection).
func rootNames(top *jail.Dir) []string {
	ents, err := top.ReadDir()
	if err != nil {
		return nil
	}
	names := make([]string, len(ents))
	for i, en := range ents {
		names[i] = en.Name
	}
	return names
}

func enabled(markers, names []string) bool {
	if len(markers) == 0 {
		return true
	}
	for _, m := range markers {
		for _, n := range names {
			if ok, _ := path.Match(m, n); ok {
				return true
			}
		}
	}
	return false
}

// Packs reports the sources in force at root (a directory path), in
// precedence order: "builtin:secrets", ..., "operator:x.toml",
// "project:.bastion-risk.toml".
func (e *Engine) Packs(root string) []string {
	st := e.state(cleanKey(root), pathOpener(root))
	return append([]string(nil), st.packs...)
}

// cleanKey names a root in the engine's per-root state: its absolute,
// clean path, so "x" and "./x/" share one entry.
func cleanKey(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return filepath.Clean(root)
}

func pathOpener(root string) func() (*jail.Root, func(), error) {
	return func() (*jail.Root, func(), error) {
		r, err := jail.OpenRoot(root)
		if err != nil {
			return nil, nil, err
		}
		return r, func() { r.Close() }, nil
	}
}

func rootOpener(r *jail.Root) func() (*jail.Root, func(), error) {
	return func() (*jail.Root, func(), error) { return r, nil, nil }
}

// CleanRel validates a path relative to a root and returns it
// slash-separated and clean ("." for the root itself). Absolute paths and
// paths that climb out with ".." are refused with PATH_ESCAPE.
func CleanRel(rel string) (string, error) {
	rel = filepath.ToSlash(rel)
	if rel == "" {
		return ".", nil
	}
	if strings.HasPrefix(rel, "/") || filepath.IsAbs(rel) || (len(rel) > 1 && rel[1] == ':') {
		return "", result.New(result.PathEscape, "the path must be relative to the root")
	}
	if strings.ContainsRune(rel, 0) {
		return "", result.New(result.InvalidRequest, "the path contains a NUL byte")
	}
	c := path.Clean(rel)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", jail.ErrEscape
	}
	return c, nil
}

// ClassifyPath classifies rel under the directory root by rules and, when
// root is a repository's top, by the git facts Classify gives (git.go:
// tracked, ignored, CONSULT_HISTORY, IGNORABLE), without reading rel's
// content. Only the root's marker files, its project rule file and its
// git files (.git/index, .gitignore files, info/exclude, the global
// excludes file) are read, through package jail; git is never run. The
// root stays open between calls (gitpath.go).
func (e *Engine) ClassifyPath(root, rel string, isDir bool) (Descriptor, error) {
	rel, err := CleanRel(rel)
	if err != nil {
		return Descriptor{}, err
	}
	return e.classifyPath(root, rel, isDir), nil
}

// matches collects every rule matching rel, winner first. It gives the
// same answers as each matcher's Match(rel, isDir): a path under a
// directory a matcher excludes is excluded by that directory's line, and
// otherwise the path's own last matching line decides.
func (st *rootState) matches(rel string, isDir bool) []match {
	if rel == "." {
		return nil
	}
	parent := st.dirState(parentOf(rel))
	lines := make([]int32, len(st.flat))
	st.set.Child(parent, rel, isDir, lines)
	var ms []match
	for j, line := range lines {
		if line >= 0 {
			fm := &st.flat[j]
			i := fm.set.index[fm.cat][line]
			ms = append(ms, match{set: fm.set, rule: &fm.set.Rules[i], idx: i})
		}
	}
	sortMatches(ms)
	return ms
}

// parentOf returns the parent directory of a clean relative path, "" at
// the top.
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// dirState returns, for the directory dir ("" for the root), the line of
// each flat matcher excluding dir or an ancestor, or -1; nil at the root.
// Answers are memoised per directory.
func (st *rootState) dirState(dir string) []int32 {
	if dir == "" {
		return nil
	}
	st.memoMu.RLock()
	s, ok := st.memo[dir]
	st.memoMu.RUnlock()
	if ok {
		return s
	}
	parent := st.dirState(parentOf(dir))
	s = make([]int32, len(st.flat))
	st.set.Child(parent, dir, true, s)
	memoPut(&st.memoMu, st.memo, dir, s)
	return s
}

func sortMatches(ms []match) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].better(ms[j]) })
}

// describe builds the descriptor from rule matches and content findings.
func (st *rootState) describe(rel string, isDir bool, findings []Finding, scanned, binary bool) Descriptor {
	d := describe(rel, isDir, st.matches(rel, isDir), findings, scanned, binary)
	st.projectNotes(rel, &d.Metadata)
	return d
}

func describe(rel string, isDir bool, ms []match, findings []Finding, scanned, binary bool) Descriptor {
	md := Metadata{Importance: Normal, Category: CategoryNone, Reasons: []string{}, MatchedRules: []MatchedRule{}}
	seen := map[string]bool{}
	addReason := func(r string) {
		if r != "" && !seen[r] {
			seen[r] = true
			md.Reasons = append(md.Reasons, r)
		}
	}
	if len(ms) > 0 {
		w := ms[0].rule
		md.Category = string(w.Category)
		md.Importance = importanceOf(w.Category)
		md.SuggestedAction = w.SuggestedAction
	}
	contentRisk := false
	for _, f := range findings {
		if f.Risk {
			contentRisk = true
		}
	}
	if contentRisk && md.Category != string(Risk) {
		md.Category = string(Risk)
		md.Importance = HighRisk
		md.SuggestedAction = ReadOnly
	}
	if contentRisk {
		for _, f := range findings {
			if f.Risk {
				addReason(f.Reason())
			}
		}
	}
	for _, m := range ms {
		addReason(m.rule.Reason)
		md.MatchedRules = append(md.MatchedRules, MatchedRule{Pattern: m.rule.Pattern, Category: m.rule.Category,
			Source: m.set.Source, Reason: m.rule.Reason})
	}
	for _, f := range findings {
		if !f.Risk {
			addReason(f.Reason())
		}
	}
	lowerForPlaceholders(&md, findings)
	if md.SuggestedAction == "" {
		md.SuggestedAction = CarefulEdit
	}
	uriRel := rel
	if rel == "." {
		uriRel = ""
	}
	return Descriptor{URI: URIFor(uriRel), MimeType: mimeFor(rel, isDir, scanned, binary), Metadata: md}
}

func importanceOf(c Category) Importance {
	switch c {
	case Risk:
		return HighRisk
	case Value:
		return HighValue
	case Ignore:
		return Ignorable
	}
	return Normal
}

// cacheKey makes a cached descriptor valid only for the same file
// (identity, size, modification time), at the same path, under the same
// rules.
type cacheKey struct {
	root     string
	rel      string
	dev, ino uint64
	size     int64
	mtime    int64
	mode     fs.FileMode
	version  uint64
	gen      uint64
}

// Classify classifies rel under root by rules and, for regular files, by a
// bounded content scan. Every access is anchored beneath root by package
// jail: it never follows a symbolic link (a link at the end of rel is
// classified by its name and reported as a link; a link in a parent
// component is refused with PATH_ESCAPE), never leaves root and never
// crosses into another mount. Results are cached under the file's
// identity, size and modification time and the rule-set version, so a
// renamed or rewritten file is never answered from stale data.
func (e *Engine) Classify(root *jail.Root, rel string) (Descriptor, error) {
	rel, err := CleanRel(rel)
	if err != nil {
		return Descriptor{}, err
	}
	key := rootKey(root)
	st := e.state(key, rootOpener(root))
	fi, err := root.Lstat(rel)
	if err != nil {
		return Descriptor{}, refusal(err)
	}
	ck := cacheKey{root: key, rel: rel, dev: fi.ID.Dev, ino: fi.ID.Ino, size: fi.Size, mtime: fi.ModTime.UnixNano(),
		mode: fi.Mode, version: st.globalVersion, gen: st.gen}
	e.cacheMu.Lock()
	d, ok := e.cache[ck]
	e.cacheMu.Unlock()
	if ok {
		d = d.clone()
		e.withGit(root, key, rel, fi.IsDir(), &d)
		return d, nil
	}
	var (
		findings        []Finding
		scanned, binary bool
	)
	isDir := fi.IsDir()
	switch {
	case fi.IsSymlink():
		findings = []Finding{{Kind: "header", Label: "symbolic link: not followed, content not scanned"}}
	case fi.IsRegular() && e.opts.ScanBytes > 0:
		data, err := e.readHead(root, rel, fi)
		if err != nil {
			return Descriptor{}, err
		}
		findings, binary = scanContent(e.secrets, rel, data)
		if !binary && int64(len(data)) == fi.Size && st.lowering() {
			findings = withPlaceholderProof(rel, data, findings)
		}
		scanned = true
	}
	d = st.describe(rel, isDir, findings, scanned, binary)
	if !isDir {
		d.Metadata.Size = fi.Size
	}
	d.Metadata.LastModified = formatTime(fi.ModTime)
	e.cacheMu.Lock()
	if len(e.cache) >= e.opts.CacheEntries {
		clear(e.cache)
	}
	e.cache[ck] = d.clone()
	e.cacheMu.Unlock()
	e.withGit(root, key, rel, isDir, &d)
	e.log.Debug("risk classified", "path", rel, "importance", string(d.Metadata.Importance), "rules", len(d.Metadata.MatchedRules))
	return d, nil
}

// refusal keeps a jail refusal as it is (its code and reason are already
// written for the model) and classifies anything else.
func refusal(err error) error {
	var re *result.Error
	if errors.As(err, &re) {
		return err
	}
	code, why := result.Classify(err)
	return result.Wrap(code, why, err)
}

// readHead reads the first ScanBytes of rel, checking that what it opened
// is the file it stat'ed. The open is jail's: anchored, no symlink
// anywhere, no mount crossing, regular files only, never blocking.
func (e *Engine) readHead(root *jail.Root, rel string, want jail.Info) ([]byte, error) {
	f, err := root.OpenFile(rel)
	if err != nil {
		return nil, refusal(err)
	}
	defer f.Close()
	got, err := f.Stat()
	if err == nil {
		dev, ino := fileID(got)
		if !got.Mode().IsRegular() || (dev|ino != 0 && want.ID != (jail.Identity{}) && (jail.Identity{Dev: dev, Ino: ino}) != want.ID) {
			err = jail.ErrIdentity
		}
	}
	if err != nil {
		return nil, result.Wrap(result.Stale, "the file changed while it was being classified; ask again", err)
	}
	buf := make([]byte, e.opts.ScanBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		code, why := result.Classify(err)
		return nil, result.Wrap(code, why, err)
	}
	return buf[:n], nil
}
