package risk

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk/gitignore"
)

// DefaultSummaryMaxEntries is the walk's entry cap when neither
// SummaryLimits.MaxEntries nor Options.SummaryMaxEntries sets one.
const DefaultSummaryMaxEntries = 2_000_000

// DefaultProgressEvery is how many entries pass between two calls of
// SummaryLimits.Progress when ProgressEvery is 0.
const DefaultProgressEvery = 50_000

// SummaryLimits bounds a summary.
type SummaryLimits struct {
	// MaxEntries stops the walk after this many entries (files and
	// directories); 0 means the engine's Options.SummaryMaxEntries, or
	// DefaultSummaryMaxEntries. Summary.Truncated reports a stop.
	MaxEntries int
	// MaxListed caps each list (high risk, high value, ignorable); 0
	// means 50. Lists keep the biggest areas and the first files found.
	// High-risk files past the cap are counted, not kept, so memory does
	// not grow with them.
	MaxListed int
	// Progress, if set, is called every ProgressEvery entries with the
	// entries, files and directories walked so far, on the walking
	// goroutine (it should return quickly).
	Progress func(entries, files, dirs int)
	// ProgressEvery is the entry interval of Progress; 0 means
	// DefaultProgressEvery.
	ProgressEvery int
	// Usage, if set, also measures in the same walk the disk usage of
	// everything beneath the directory, exactly as jail's Dir.Usage does
	// (each entry through jail's CountEntry and EnterForUsage), into
	// Summary.Usage. The usage is whole even when the entry cap stops the
	// classification (Truncated): past the cap the walk only measures.
	Usage bool
}

// Summary is a one-shot overview of a tree.
type Summary struct {
	Path      string             `json:"path"`
	Files     int                `json:"files"`
	Dirs      int                `json:"dirs"`
	Counts    map[Importance]int `json:"counts"`
	HighRisk  []SummaryItem      `json:"high_risk"`
	HighValue []SummaryItem      `json:"high_value"`
	Ignorable []SummaryItem      `json:"ignorable"`
	// Omitted counts items left out of each list by MaxListed.
	Omitted map[Importance]int `json:"omitted"`
	// Skipped counts directories that were not entered: another mount,
	// a name jail refuses (control characters, invalid UTF-8), no
	// permission, or gone since it was listed. They count as directories,
	// their contents not at all.
	Skipped   int      `json:"skipped"`
	Truncated bool     `json:"truncated"`
	Packs     []string `json:"packs"`
	// Git counts files by what their repositories' git files say (each
	// file by its nearest enclosing repository under the root), when any
	// file lies in one (see SummaryGit).
	Git *SummaryGit `json:"git,omitempty"`
	// Usage is the disk usage beneath the directory (not the directory
	// itself) when SummaryLimits.Usage asked for it, else nil.
	Usage *jail.Usage `json:"-"`
	// Lowered counts the files HIGH_RISK by name that their content
	// lowers to NORMAL (every value is a placeholder), as their
	// descriptors do: they are counted under NORMAL and not listed.
	Lowered int `json:"lowered,omitempty"`
	// ContentUnread counts the files HIGH_RISK by name whose content could
	// have lowered them but was not checked, the summary having made
	// MaxSummaryContentChecks checks: they keep the name verdict.
	ContentUnread int `json:"content_unread,omitempty"`
}

// SummaryItem is a file, or an area (a directory whose rule also covers
// what is inside it) with its file count, or a group of loose files
// matched by one rule.
type SummaryItem struct {
	Path            string `json:"path"`
	Kind            string `json:"kind"` // "file", "dir" or "files" (loose files of one rule)
	Files           int    `json:"files"`
	Reason          string `json:"reason"`
	SuggestedAction Action `json:"suggestedAction"`
	rule            *Rule
}

type area struct {
	item *SummaryItem
	cat  Category
}

type walker struct {
	ctx       context.Context
	flat      []flatMatcher
	set       *gitignore.Set
	lim       SummaryLimits
	s         *Summary
	areas     []*area // open areas, outermost first
	loose     map[*Rule]*SummaryItem
	entries   int
	scratch   []int32
	items     map[Importance][]*SummaryItem
	truncated bool
	git       *gitCounter      // nil outside a repository
	lower     *summaryLowering // placeholder lowering (summary_lower.go)
	// riskOmitted counts high-risk items not kept: past MaxListed, in
	// walk order, they would be cut at the end anyway.
	riskOmitted int
	// usage is Summary.Usage while the walk measures (SummaryLimits.Usage),
	// else nil; stop is its per-directory check of ctx.
	usage *jail.Usage
	stop  func() bool
}

// Summarize walks rel under root (through package jail: never following a
// symbolic link, never leaving root, never entering another mount) and
// classifies every entry by rules. Files' content is read only to lower
// files that are HIGH_RISK by name and hold nothing but placeholders, as
// their descriptors do, at most MaxSummaryContentChecks of them
// (summary_lower.go); otherwise use Classify on the files that matter.
// Directories a rule marks (node_modules/, migrations/) are reported as
// one area with their file count rather than file by file. When ctx is
// cancelled the walk stops within one directory listing and Summarize
// returns ErrSummaryCancelled.
func (e *Engine) Summarize(ctx context.Context, root *jail.Root, rel string, lim SummaryLimits) (*Summary, error) {
	rel, err := CleanRel(rel)
	if err != nil {
		return nil, err
	}
	lim = e.summaryLimits(lim)
	if rel != "." {
		fi, err := root.Lstat(rel)
		if err != nil {
			return nil, refusal(err)
		}
		if !fi.IsDir() {
			return nil, result.New(result.InvalidRequest, "the path is not a directory; classify it instead")
		}
	}
	dir, err := root.OpenDir(rel)
	if err != nil {
		return nil, refusal(err)
	}
	defer dir.Close()
	return e.summarizeDir(ctx, root, dir, rel, lim)
}

// SummarizeDir is Summarize of dir, a directory already opened under root
// (dir.Rel names it): a caller that checked the directory's identity
// summarises exactly the directory it checked. dir stays open.
func (e *Engine) SummarizeDir(ctx context.Context, root *jail.Root, dir *jail.Dir, lim SummaryLimits) (*Summary, error) {
	rel, err := CleanRel(dir.Rel())
	if err != nil {
		return nil, err
	}
	return e.summarizeDir(ctx, root, dir, rel, e.summaryLimits(lim))
}

// summarizeDir walks dir, at rel under root, under lim (defaults filled).
func (e *Engine) summarizeDir(ctx context.Context, root *jail.Root, dir *jail.Dir, rel string, lim SummaryLimits) (*Summary, error) {
	st := e.state(rootKey(root), rootOpener(root))
	s := &Summary{Path: rel, Counts: map[Importance]int{HighRisk: 0, HighValue: 0, Normal: 0, Ignorable: 0},
		Omitted: map[Importance]int{}, Packs: append([]string(nil), st.packs...)}
	w := &walker{ctx: ctx, flat: st.flat, set: st.set, lim: lim, s: s, loose: map[*Rule]*SummaryItem{}, items: map[Importance][]*SummaryItem{},
		scratch: make([]int32, len(st.flat))}
	w.git = e.summaryGit(root, s)
	w.git.max = lim.MaxListed
	if lim.Usage {
		s.Usage = &jail.Usage{}
		w.usage, w.stop = s.Usage, func() bool { return ctx.Err() != nil }
	}
	w.lower = e.newSummaryLowering(root, st)
	// The starting directory carries its own and its ancestors' answers.
	state := make([]int32, len(st.flat))
	for j, fm := range st.flat {
		state[j] = -1
		if rel != "." {
			if ex, line := fm.m.Match(rel, true); ex {
				state[j] = int32(line)
			}
		}
	}
	if rel != "." {
		if win, ok := w.winner(state); ok {
			w.open(rel, &win)
		}
	}
	prefix := ""
	if rel != "." {
		prefix = rel + "/"
	}
	if err := w.walk(dir, prefix, state); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ErrSummaryCancelled
	}
	w.finish()
	return s, nil
}

// ErrSummaryCancelled is Summarize's answer when its context was
// cancelled before the walk ended: no partial summary is returned.
var ErrSummaryCancelled = result.New(result.OperationFailed, "the summary was cancelled before the walk ended; nothing was returned")

func rootKey(r *jail.Root) string { return r.Path() }

// summaryLimits fills lim's defaults: the engine's entry cap, 50 listed,
// progress every DefaultProgressEvery entries.
func (e *Engine) summaryLimits(lim SummaryLimits) SummaryLimits {
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = e.opts.SummaryMaxEntries
	}
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = DefaultSummaryMaxEntries
	}
	if lim.MaxListed <= 0 {
		lim.MaxListed = 50
	}
	if lim.ProgressEvery <= 0 {
		lim.ProgressEvery = DefaultProgressEvery
	}
	return lim
}

// add lists it under imp. A high-risk item past MaxListed is only counted:
// that list keeps walk order, so it would be cut at the end anyway.
func (w *walker) add(imp Importance, it *SummaryItem) {
	if imp == HighRisk && len(w.items[HighRisk]) >= w.lim.MaxListed {
		w.riskOmitted++
		return
	}
	w.items[imp] = append(w.items[imp], it)
}

func (w *walker) winner(state []int32) (match, bool) {
	var best match
	found := false
	for j, line := range state {
		if line < 0 {
			continue
		}
		fm := &w.flat[j]
		i := fm.set.index[fm.cat][line]
		m := match{set: fm.set, rule: &fm.set.Rules[i], idx: i}
		if !found || m.better(best) {
			best, found = m, true
		}
	}
	return best, found
}

// open starts an area for a directory whose winning rule is new here.
func (w *walker) open(rel string, m *match) {
	it := &SummaryItem{Path: rel + "/", Kind: "dir", Reason: m.rule.Reason, SuggestedAction: m.rule.SuggestedAction, rule: m.rule}
	w.areas = append(w.areas, &area{item: it, cat: m.rule.Category})
	w.add(importanceOf(m.rule.Category), it)
}

// walk visits dir's entries in name order, under state (the rule matches
// of dir and its ancestors), until MaxEntries is reached; past it, with
// SummaryLimits.Usage, it only measures the rest (measureRest).
func (w *walker) walk(dir *jail.Dir, prefix string, state []int32) error {
	if w.ctx.Err() != nil {
		w.truncated = true // unwinds the walk; Summarize reports the cancellation
		return nil
	}
	ents, err := dir.ReadDir()
	if err != nil {
		return refusal(err)
	}
	slices.SortFunc(ents, func(a, b jail.Entry) int { return strings.Compare(a.Name, b.Name) })
	_, hasGit := slices.BinarySearchFunc(ents, ".git", func(a jail.Entry, n string) int { return strings.Compare(a.Name, n) })
	w.git.note(strings.TrimSuffix(prefix, "/"), hasGit)
	for i, ent := range ents {
		if w.entries >= w.lim.MaxEntries {
			w.truncated = true
		}
		if w.truncated {
			// The cap, here or below, or a cancellation.
			return w.measureRest(dir, ents[i:])
		}
		w.entries++
		if w.entries%1024 == 0 && w.ctx.Err() != nil {
			w.truncated = true
			return nil
		}
		if w.lim.Progress != nil && w.entries%w.lim.ProgressEvery == 0 {
			w.lim.Progress(w.entries, w.s.Files, w.s.Dirs)
		}
		if err := w.entry(dir, prefix, ent, state); err != nil {
			return err
		}
	}
	return nil
}

// entry classifies ent, an entry of dir, and walks it when it is a
// directory; with SummaryLimits.Usage it also measures it.
func (w *walker) entry(dir *jail.Dir, prefix string, ent jail.Entry, state []int32) error {
	name := ent.Name
	rel := prefix + name
	typ, enter := w.stat(dir, ent)
	isDir := typ&fs.ModeType == fs.ModeDir
	child := w.scratch
	if isDir {
		child = make([]int32, len(w.flat))
	}
	w.set.Child(state, rel, isDir, child)
	win, found := w.winner(child)
	if isDir {
		return w.dir(dir, name, rel, child, win, found, enter)
	}
	w.file(rel, win, found)
	if enter {
		// Listed as a file, a directory by the time it was stat'ed: the
		// listing classifies it, the usage measures what it is now.
		return w.measureDir(dir, name)
	}
	return nil
}

// stat returns ent's type, from the listing or, when the file system did
// not give it there, from its lstat. With SummaryLimits.Usage it counts ent
// in the usage (jail's CountEntry) and reports whether the usage enters it.
func (w *walker) stat(dir *jail.Dir, ent jail.Entry) (typ fs.FileMode, enter bool) {
	typ = ent.Type
	if w.usage != nil {
		fi, enter, err := dir.CountEntry(ent.Name, w.usage)
		if typ == fs.ModeIrregular && err == nil {
			typ = fi.Mode.Type()
		}
		return typ, enter
	}
	if typ == fs.ModeIrregular {
		if fi, err := dir.Lstat(ent.Name); err == nil {
			typ = fi.Mode.Type()
		}
	}
	return typ, false
}

// openDir opens the child directory name of parent for the walk, or
// returns nil when it is not entered. With SummaryLimits.Usage it is the
// usage's entry (jail's EnterForUsage), and only when the usage enters it
// (enter): one open serves both.
func (w *walker) openDir(parent *jail.Dir, name string, enter bool) *jail.Dir {
	if w.usage == nil {
		sub, err := parent.OpenDir(name)
		if err != nil {
			return nil
		}
		return sub
	}
	if !enter {
		return nil
	}
	sub, err := parent.EnterForUsage(name, w.usage, w.stop)
	if err != nil {
		w.truncated = true // cancelled: Summarize reports it
	}
	return sub
}

// measureRest measures ents, the rest of dir's listing once the walk is
// truncated, for the usage only (SummaryLimits.Usage): the entry cap stops
// the classification, never the measurement. Without Usage, or when ctx
// is cancelled, it does nothing.
func (w *walker) measureRest(dir *jail.Dir, ents []jail.Entry) error {
	if w.usage == nil {
		return nil
	}
	for _, ent := range ents {
		if w.ctx.Err() != nil {
			return nil
		}
		if _, enter, _ := dir.CountEntry(ent.Name, w.usage); !enter {
			continue
		}
		if err := w.measureDir(dir, ent.Name); err != nil {
			return err
		}
	}
	return nil
}

// measureDir adds the usage of the child directory name of dir, as
// Dir.Usage measures it, without classifying it.
func (w *walker) measureDir(dir *jail.Dir, name string) error {
	sub, err := dir.EnterForUsage(name, w.usage, w.stop)
	if err != nil {
		w.truncated = true // cancelled: Summarize reports it
		return nil
	}
	if sub == nil {
		return nil // not entered, counted as skipped
	}
	u, err := sub.Usage(w.stop)
	sub.Close()
	w.usage.Add(u)
	if err != nil && w.ctx.Err() == nil {
		return refusal(err)
	}
	return nil
}

// dir counts the directory rel (named name in parent), opens an area when
// its winning rule is new here, and walks it under child. enter is the
// usage's answer for it (see openDir).
func (w *walker) dir(parent *jail.Dir, name, rel string, child []int32, win match, found, enter bool) error {
	w.s.Dirs++
	depth := len(w.areas)
	if found && (depth == 0 || w.areas[depth-1].item.rule != win.rule) {
		w.open(rel, &win)
	}
	defer func() { w.areas = w.areas[:depth] }()
	sub := w.openDir(parent, name, enter)
	if sub == nil {
		// Not entered (a mount, a refused name, no permission, gone):
		// counted, never guessed at.
		w.s.Skipped++
		return nil
	}
	defer sub.Close()
	return w.walk(sub, rel+"/", child)
}

// file counts the file rel: in every open area, under its importance, and
// in an item unless its area already shows it.
func (w *walker) file(rel string, win match, found bool) {
	w.s.Files++
	gitIgnored := w.git.count(rel)
	for _, a := range w.areas {
		a.item.Files++
	}
	imp := Normal
	if found {
		imp = importanceOf(win.rule.Category)
	} else if gitIgnored {
		imp = Ignorable // as its descriptor says (git.go: applyGit)
	}
	// Lowered by its content as its descriptor is (summary_lower.go): a
	// RISK rule still matches it, so git cannot make it IGNORABLE.
	lowered := imp == HighRisk && w.lower.lowered(rel, w.s)
	if lowered {
		imp = Normal
	}
	w.s.Counts[imp]++
	if !found || lowered {
		return
	}
	if n := len(w.areas); n > 0 && w.areas[n-1].item.rule == win.rule {
		return // counted in its area
	}
	if win.rule.Category == Risk {
		w.add(HighRisk, &SummaryItem{Path: rel, Kind: "file", Files: 1,
			Reason: win.rule.Reason, SuggestedAction: win.rule.SuggestedAction, rule: win.rule})
		return
	}
	g := w.loose[win.rule]
	if g == nil {
		g = &SummaryItem{Path: win.rule.Pattern, Kind: "files", Reason: win.rule.Reason,
			SuggestedAction: win.rule.SuggestedAction, rule: win.rule}
		w.loose[win.rule] = g
		w.add(imp, g)
	}
	g.Files++
	if g.Files == 1 {
		// A lone file is better shown by its path.
		g.Path, g.Kind = rel, "file"
	} else if g.Kind == "file" {
		g.Path, g.Kind = g.rule.Pattern, "files"
	}
}

func (w *walker) finish() {
	w.s.Truncated = w.truncated
	if w.riskOmitted > 0 {
		w.s.Omitted[HighRisk] = w.riskOmitted
	}
	for imp, list := range w.items {
		if imp != HighRisk {
			// Biggest first; high-risk files stay in walk order.
			sort.SliceStable(list, func(i, j int) bool { return list[i].Files > list[j].Files })
		}
		if len(list) > w.lim.MaxListed {
			w.s.Omitted[imp] += len(list) - w.lim.MaxListed
			list = list[:w.lim.MaxListed]
		}
		out := make([]SummaryItem, len(list))
		for i, it := range list {
			out[i] = *it
		}
		switch imp {
		case HighRisk:
			w.s.HighRisk = out
		case HighValue:
			w.s.HighValue = out
		case Ignorable:
			w.s.Ignorable = out
		}
	}
	if w.s.HighRisk == nil {
		w.s.HighRisk = []SummaryItem{}
	}
	if w.s.HighValue == nil {
		w.s.HighValue = []SummaryItem{}
	}
	if w.s.Ignorable == nil {
		w.s.Ignorable = []SummaryItem{}
	}
}

// Text renders the summary for a model to read, one fact per line:
// "node_modules/: 48,112 files, ignorable — Installed npm dependencies...".
// Names from disk are quoted when they hold control characters.
func (s *Summary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s files in %s directories", displayName(s.Path), commas(s.Files), commas(s.Dirs))
	if s.Truncated {
		b.WriteString(" (walk stopped at the entry limit; counts are partial)")
	}
	if s.Skipped > 0 {
		fmt.Fprintf(&b, " (%s directories not entered: other mounts, refused names or no access)", commas(s.Skipped))
	}
	fmt.Fprintf(&b, "\nHIGH_RISK %s, HIGH_VALUE %s, NORMAL %s, IGNORABLE %s\n",
		commas(s.Counts[HighRisk]), commas(s.Counts[HighValue]), commas(s.Counts[Normal]), commas(s.Counts[Ignorable]))
	b.WriteString(s.Git.text())
	b.WriteString(s.loweringText())
	section := func(title, word string, items []SummaryItem, omitted int) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		for _, it := range items {
			switch it.Kind {
			case "file":
				fmt.Fprintf(&b, "  %s: %s, %s (%s)\n", displayName(it.Path), word, it.Reason, it.SuggestedAction)
			default:
				fmt.Fprintf(&b, "  %s: %s files, %s, %s (%s)\n", displayName(it.Path), commas(it.Files), word, it.Reason, it.SuggestedAction)
			}
		}
		if omitted > 0 {
			fmt.Fprintf(&b, "  ... and %s more\n", commas(omitted))
		}
	}
	section("High risk", "high risk", s.HighRisk, s.Omitted[HighRisk])
	section("High value", "high value", s.HighValue, s.Omitted[HighValue])
	section("Ignorable", "ignorable", s.Ignorable, s.Omitted[Ignorable])
	return b.String()
}

func displayName(p string) string {
	if !utf8.ValidString(p) || strings.IndexFunc(p, func(r rune) bool { return unicode.IsControl(r) }) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

func commas(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
