// Package gitignore matches slash-separated relative paths against one list
// of gitignore patterns with git's own semantics, as if the list were the
// only .gitignore, placed at the root of the repository.
//
// It follows git (dir.c and wildmatch.c) rather than a glob library: the last
// matching line decides; "!" re-includes, except that nothing under an
// excluded directory can be re-included; a trailing "/" matches directories
// only; a slash at the start or in the middle anchors the pattern to the
// root; a pattern without a slash matches the base name at any depth; "**"
// spans directories only when it stands between slashes.
//
// The package refuses to guess: it never reads the file system (the caller
// says whether a path is a directory), never reads .gitignore files of
// subdirectories, global excludes or .git/info/exclude, and never folds case.
// Compile refuses a line that holds a newline or a NUL byte rather than
// splitting it silently.
package gitignore

import (
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
)

// pattern is one compiled, non-blank, non-comment line.
type pattern struct {
	text      string // the pattern body: after a leading '!', without the trailing '/'
	line      int    // index of the source line in the list given to Compile
	prefix    int    // length of the leading part free of wildcards (git's nowildcardlen)
	negate    bool   // the line began with '!'
	mustBeDir bool   // the line ended with '/'
	noDir     bool   // no slash in text: match the base name at any depth
	endsWith  bool   // "*literal": a base-name suffix test suffices
	// need is a run of literal bytes that every text this pattern's
	// wildcard part (text[prefix:]) matches must contain, or "". It only
	// lets matches skip wildmatch for texts that cannot match.
	need string
}

// Matcher is a compiled pattern list. It is immutable and safe for
// concurrent use.
type Matcher struct {
	patterns []pattern
	lines    int

	// Indexes over patterns, each slice ascending by position, so the
	// last-match rule can be applied without trying every pattern.
	literal    map[string][]int32 // noDir patterns without wildcards, by base name
	suffix     map[string][]int32 // noDir "*literal" patterns, by literal
	suffixLens []int              // distinct literal lengths in suffix
	general    []int32            // every other pattern
}

// Compile builds a Matcher from the lines of one gitignore file, in order.
// Line i of the input is rule i in Match's answers. Lines may end in "\r";
// the first may begin with a UTF-8 byte-order mark. Blank lines and lines
// starting with '#' match nothing.
func Compile(lines []string) (*Matcher, error) {
	m := &Matcher{lines: len(lines), literal: map[string][]int32{}, suffix: map[string][]int32{}}
	for i, raw := range lines {
		if strings.ContainsAny(raw, "\n\x00") {
			return nil, result.New(result.InvalidRequest,
				"a gitignore pattern may not contain a newline or a NUL byte")
		}
		if i == 0 {
			raw = strings.TrimPrefix(raw, "\uFEFF")
		}
		p, ok := parseLine(raw)
		if !ok {
			continue
		}
		p.line = i
		pos := int32(len(m.patterns))
		m.patterns = append(m.patterns, p)
		switch {
		case p.noDir && p.prefix == len(p.text):
			m.literal[p.text] = append(m.literal[p.text], pos)
		case p.noDir && p.endsWith:
			lit := p.text[1:]
			if _, seen := m.suffix[lit]; !seen && !containsInt(m.suffixLens, len(lit)) {
				m.suffixLens = append(m.suffixLens, len(lit))
			}
			m.suffix[lit] = append(m.suffix[lit], pos)
		default:
			m.general = append(m.general, pos)
		}
	}
	return m, nil
}

// MustCompile is Compile for lists known to be valid (built-in tables and
// tests); it panics on error.
func MustCompile(lines ...string) *Matcher {
	m, err := Compile(lines)
	if err != nil {
		panic(err)
	}
	return m
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// parseLine turns one line into a pattern the way git's
// add_patterns_from_buffer and parse_path_pattern do. ok is false for a
// line that can never match (blank, comment, or empty after trimming).
func parseLine(s string) (p pattern, ok bool) {
	if s == "" || s[0] == '#' {
		return p, false
	}
	s = strings.TrimSuffix(s, "\r")
	s = trimTrailingSpaces(s)
	if s != "" && s[0] == '!' {
		p.negate = true
		s = s[1:]
	}
	if n := len(s); n > 0 && s[n-1] == '/' {
		p.mustBeDir = true
		s = s[:n-1]
	}
	if s == "" {
		return p, false
	}
	p.noDir = !strings.Contains(s, "/")
	p.prefix = simpleLength(s)
	p.endsWith = s[0] == '*' && simpleLength(s[1:]) == len(s)-1
	p.text = s
	p.need = requiredLiteral(s[p.prefix:])
	return p, true
}

// trimTrailingSpaces removes unescaped trailing spaces (only spaces, not
// tabs); "\ " keeps its space, and a final lone backslash stops trimming.
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// requiredLiteral returns the longest run of bytes of the wildcard part of
// a pattern that wildmatch can only match by the same run in the text: a
// piece between '*', '?' and '/' (a '/' next to "**" may match nothing, so
// slashes split pieces too). Literal bytes always match themselves, one for
// one, so a text without the piece cannot match. Scanning stops at the
// first '[' or '\\', whose meaning depends on what follows.
func requiredLiteral(wild string) string {
	best := ""
	for _, piece := range literalRuns(wild) {
		if len(piece) > len(best) {
			best = piece
		}
	}
	return best
}

// literalRuns returns the non-empty runs of wild between '*', '?' and '/',
// up to the first '[' or '\\' (see requiredLiteral).
func literalRuns(wild string) []string {
	var runs []string
	start := 0
	for i := 0; i <= len(wild); i++ {
		c := byte('*')
		if i < len(wild) {
			c = wild[i]
		}
		switch c {
		case '*', '?', '/', '[', '\\':
			if i > start {
				runs = append(runs, wild[start:i])
			}
			if c == '[' || c == '\\' {
				return runs
			}
			start = i + 1
		}
	}
	return runs
}

// simpleLength is the length of s's leading run of bytes that are not
// wildcards or backslashes.
func simpleLength(s string) int {
	for i := 0; i < len(s); i++ {
		if isGlobSpecial(s[i]) {
			return i
		}
	}
	return len(s)
}

// Len reports how many lines the Matcher was compiled from.
func (m *Matcher) Len() int { return m.lines }

// Match reports whether relPath is excluded by the list, and the index of
// the line that decided it (a negated line when it re-included the path),
// or -1 when no line matched. relPath is slash-separated and relative to
// the root; leading "./" and slashes and trailing slashes are ignored.
//
// As in git, a path under an excluded directory is excluded whatever later
// lines say; rule is then the line that excluded the highest such
// directory.
func (m *Matcher) Match(relPath string, isDir bool) (excluded bool, rule int) {
	relPath = clean(relPath)
	if relPath == "" || len(m.patterns) == 0 {
		return false, -1
	}
	for i := 0; i < len(relPath); i++ {
		if relPath[i] != '/' {
			continue
		}
		dir := relPath[:i]
		if pos := m.last(dir, dir[strings.LastIndexByte(dir, '/')+1:], true); pos >= 0 && !m.patterns[pos].negate {
			return true, m.patterns[pos].line
		}
	}
	pos := m.last(relPath, relPath[strings.LastIndexByte(relPath, '/')+1:], isDir)
	if pos < 0 {
		return false, -1
	}
	return !m.patterns[pos].negate, m.patterns[pos].line
}

// MatchSelf applies the list to relPath alone, ignoring its parent
// directories: the last matching line decides. It is for walkers that
// carry each directory's answer down to its children (a child of an
// excluded directory is excluded by the directory's rule), which gives the
// same answers as Match at a fraction of the cost. matched is false and rule
// -1 when no line matched; negated reports a re-including line.
func (m *Matcher) MatchSelf(relPath string, isDir bool) (matched, negated bool, rule int) {
	relPath = clean(relPath)
	if relPath == "" {
		return false, false, -1
	}
	pos := m.last(relPath, relPath[strings.LastIndexByte(relPath, '/')+1:], isDir)
	if pos < 0 {
		return false, false, -1
	}
	return true, m.patterns[pos].negate, m.patterns[pos].line
}

func clean(p string) string {
	if p != "" && p[0] != '.' && p[0] != '/' && p[len(p)-1] != '/' {
		return p // already clean: the common case, kept cheap
	}
	for {
		switch {
		case strings.HasPrefix(p, "./"):
			p = p[2:]
		case strings.HasPrefix(p, "/"):
			p = p[1:]
		default:
			return strings.TrimRight(p, "/")
		}
	}
}

// last returns the position of the last pattern matching path (whose base
// name is base), or -1.
func (m *Matcher) last(path, base string, isDir bool) int {
	best := -1
	if ids := m.literal[base]; len(ids) > 0 {
		best = m.lastEligible(ids, best, isDir)
	}
	for _, n := range m.suffixLens {
		if len(base) >= n {
			if ids := m.suffix[base[len(base)-n:]]; len(ids) > 0 {
				best = m.lastEligible(ids, best, isDir)
			}
		}
	}
	for i := len(m.general) - 1; i >= 0; i-- {
		pos := int(m.general[i])
		if pos <= best {
			break
		}
		p := &m.patterns[pos]
		if p.mustBeDir && !isDir {
			continue
		}
		if p.matches(path, base) {
			return pos
		}
	}
	return best
}

func (m *Matcher) lastEligible(ids []int32, best int, isDir bool) int {
	for i := len(ids) - 1; i >= 0; i-- {
		pos := int(ids[i])
		if pos <= best {
			return best
		}
		if !m.patterns[pos].mustBeDir || isDir {
			return pos
		}
	}
	return best
}

// matches applies one pattern to a path, as git's match_basename and
// match_pathname do.
func (p *pattern) matches(path, base string) bool {
	if p.noDir {
		switch {
		case p.prefix == len(p.text):
			return base == p.text
		case p.endsWith:
			return strings.HasSuffix(base, p.text[1:])
		}
		// The literal prefix matches itself only; the required piece
		// must be somewhere after it. Both are cheaper than wildmatch.
		if !strings.HasPrefix(base, p.text[:p.prefix]) ||
			(p.need != "" && !strings.Contains(base[p.prefix:], p.need)) {
			return false
		}
		return wildmatch(p.text, base, false)
	}
	pat, prefix := p.text, p.prefix
	if pat[0] == '/' {
		pat, prefix = pat[1:], prefix-1
	}
	if prefix > 0 {
		if prefix > len(path) || path[:prefix] != pat[:prefix] {
			return false
		}
		pat, path = pat[prefix:], path[prefix:]
		if pat == "" && path == "" {
			return true
		}
	}
	if p.need != "" && !strings.Contains(path, p.need) {
		return false
	}
	return wildmatch(pat, path, true)
}
