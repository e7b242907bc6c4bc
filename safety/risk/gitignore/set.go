package gitignore

import (
	"slices"
	"strings"
)

// Set asks several Matchers about the same path at once, for a walker that
// carries each directory's answers down to its children. It gives, for
// every Matcher, the same answer as that Matcher's Match, but looks a path
// up once in indexes shared by all of them instead of once per Matcher,
// and skips, without trying them, the patterns whose literal bytes the
// path lacks. A Set is immutable and safe for concurrent use.
type Set struct {
	ms []*Matcher

	literal  map[string][]ref // literal base-name patterns of every Matcher
	litLens  bitset           // lengths (mod 256) of the keys of literal
	litFirst bitset           // first bytes of the keys of literal

	suffix map[string][]ref // "*literal" patterns of every Matcher, by literal
	// suffixByLast[c] holds the lengths of the keys of suffix that end
	// with the byte c, each with the first bytes of those keys.
	suffixByLast [256][]suffixLen
	star         []ref // "*" alone: every base name ends with ""

	// The other ("general") patterns of every Matcher, each list by
	// descending position. A pattern whose text begins with a literal
	// byte is filed under it: base-name patterns under the first byte of
	// the base names they can match, anchored ones under the first byte
	// of the paths. The rest are tried on every path. Any of them is
	// tried only when the path holds its literal bytes' bigrams.
	baseFirst [256][]gref
	pathFirst [256][]gref
	anywhere  []gref
}

// ref is one pattern of one Matcher of a Set.
type ref struct {
	m, pos int32
}

// gref is one general pattern of one Matcher of a Set, with what its quick
// rejection needs at hand.
type gref struct {
	m, pos  int32
	dirOnly bool
	// need is the bigrams of the literal pieces every path the pattern
	// matches holds, byte for byte.
	need bigrams
	p    *pattern
}

// suffixLen is one literal length of a Set's suffix index and the bytes its
// literals of that length begin with.
type suffixLen struct {
	n     int
	first bitset
}

type bitset [4]uint64

func (b *bitset) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *bitset) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// bigrams is a 256-bit set of hashed pairs of adjacent bytes.
type bigrams [4]uint64

// addText adds each pair of adjacent bytes of t.
func (b *bigrams) addText(t string) {
	for i := 1; i < len(t); i++ {
		h := (uint32(t[i-1])<<8 | uint32(t[i])) * 0x85ebca6b >> 24
		b[h>>6] |= 1 << (h & 63)
	}
}

// within reports whether every pair of b is in of.
func (b *bigrams) within(of *bigrams) bool {
	return b[0]&of[0] == b[0] && b[1]&of[1] == b[1] && b[2]&of[2] == b[2] && b[3]&of[3] == b[3]
}

// NewSet builds a Set over ms; answers are reported in the same order.
func NewSet(ms ...*Matcher) *Set {
	s := &Set{ms: append([]*Matcher(nil), ms...), literal: map[string][]ref{}, suffix: map[string][]ref{}}
	for i, m := range s.ms {
		// Each Matcher's own lists are ascending by position, and
		// Matchers are added in order, so every ref list stays sorted by
		// (Matcher, position).
		for lit, ids := range m.literal {
			for _, pos := range ids {
				s.literal[lit] = append(s.literal[lit], ref{int32(i), pos})
			}
			s.litLens.add(byte(len(lit)))
			s.litFirst.add(lit[0])
		}
		for lit, ids := range m.suffix {
			for _, pos := range ids {
				if lit == "" {
					s.star = append(s.star, ref{int32(i), pos})
				} else {
					s.suffix[lit] = append(s.suffix[lit], ref{int32(i), pos})
				}
			}
		}
		for _, pos := range m.general {
			s.addGeneral(int32(i), pos, &m.patterns[pos])
		}
	}
	for lit := range s.suffix {
		s.addSuffixLen(lit)
	}
	s.sortGeneral()
	return s
}

// addSuffixLen files the suffix literal lit under its last byte.
func (s *Set) addSuffixLen(lit string) {
	lens := s.suffixByLast[lit[len(lit)-1]]
	k := slices.IndexFunc(lens, func(sl suffixLen) bool { return sl.n == len(lit) })
	if k < 0 {
		k = len(lens)
		lens = append(lens, suffixLen{n: len(lit)})
	}
	lens[k].first.add(lit[0])
	s.suffixByLast[lit[len(lit)-1]] = lens
}

// addGeneral files the general pattern p (position pos of Matcher m).
func (s *Set) addGeneral(m, pos int32, p *pattern) {
	g := gref{m: m, pos: pos, dirOnly: p.mustBeDir, p: p}
	lit := p.text[:p.prefix]
	if !p.noDir && lit != "" && lit[0] == '/' {
		lit = lit[1:] // an anchored pattern's leading slash is no byte of the path
	}
	g.need.addText(lit)
	for _, piece := range literalPieces(p.text[p.prefix:]) {
		g.need.addText(piece)
	}
	switch {
	case lit == "":
		s.anywhere = append(s.anywhere, g)
	case p.noDir:
		s.baseFirst[lit[0]] = append(s.baseFirst[lit[0]], g)
	default:
		s.pathFirst[lit[0]] = append(s.pathFirst[lit[0]], g)
	}
}

// sortGeneral orders each general list by descending position, so that
// once one of a Matcher's patterns matches, its earlier ones are skipped.
func (s *Set) sortGeneral() {
	byPos := func(a, b gref) int { return int(b.pos) - int(a.pos) }
	slices.SortStableFunc(s.anywhere, byPos)
	for c := range 256 {
		slices.SortStableFunc(s.baseFirst[c], byPos)
		slices.SortStableFunc(s.pathFirst[c], byPos)
	}
}

// literalPieces returns the runs of bytes of a pattern's wildcard part that
// wildmatch can only match by the same runs in the text: the pieces
// between '*', '?' and '/' (a '/' next to "**" may match nothing, so
// slashes split pieces too), up to the first '[' or '\\', whose meaning
// depends on what follows.
func literalPieces(wild string) []string {
	var pieces []string
	for _, run := range literalRuns(wild) {
		if len(run) > 1 {
			pieces = append(pieces, run)
		}
	}
	return pieces
}

// Len reports how many Matchers the Set holds.
func (s *Set) Len() int { return len(s.ms) }

// Child computes the answers for relPath from its parent directory's
// answers, as a walker does: out[i] is the line of Matcher i that excludes
// relPath (the parent's line when parent[i] >= 0, since nothing under an
// excluded directory can be re-included), or -1 when relPath is not
// excluded (no line matched, or a negated line re-included it). parent is
// nil for a path at the top of the tree; otherwise it holds the parent
// directory's own answers from Child. out must have Len elements and may
// not alias parent. With answers carried this way, out[i] is the rule
// Match(relPath, isDir) gives when it reports excluded, and -1 when it
// does not.
func (s *Set) Child(parent []int32, relPath string, isDir bool, out []int32) {
	relPath = clean(relPath)
	// best holds pattern positions (not lines) while the indexes are
	// consulted; a Matcher whose answer is inherited is marked -2.
	best := out[:len(s.ms)]
	if parent == nil {
		for i := range best {
			best[i] = -1
		}
	} else {
		for i, p := range parent[:len(best)] {
			best[i] = -1
			if p >= 0 {
				best[i] = -2
			}
		}
	}
	if relPath != "" {
		s.consult(relPath, isDir, best)
	}
	for i, b := range best {
		switch {
		case b == -2:
			out[i] = parent[i]
		case b >= 0 && !s.ms[i].patterns[b].negate:
			out[i] = int32(s.ms[i].patterns[b].line)
		default:
			out[i] = -1
		}
	}
}

// consult raises best[m] to the position of Matcher m's last pattern
// matching relPath (not empty), for every m whose best is not -2.
func (s *Set) consult(relPath string, isDir bool, best []int32) {
	base := relPath[strings.LastIndexByte(relPath, '/')+1:]
	if s.literalMaybe(base) {
		s.lookup(s.literal[base], best, isDir)
	}
	s.lookup(s.star, best, isDir)
	for _, sl := range s.suffixByLast[base[len(base)-1]] {
		if len(base) >= sl.n && sl.first.has(base[len(base)-sl.n]) {
			s.lookup(s.suffix[base[len(base)-sl.n:]], best, isDir)
		}
	}
	bf, pf := s.baseFirst[base[0]], s.pathFirst[relPath[0]]
	if len(bf)+len(pf)+len(s.anywhere) == 0 {
		return
	}
	var have bigrams
	have.addText(relPath)
	tryGeneral(bf, relPath, base, isDir, &have, best)
	tryGeneral(pf, relPath, base, isDir, &have, best)
	tryGeneral(s.anywhere, relPath, base, isDir, &have, best)
}

// literalMaybe is false when no key of the literal index can equal base.
func (s *Set) literalMaybe(base string) bool {
	return s.litLens.has(byte(len(base))) && s.litFirst.has(base[0])
}

// lookup raises best[m] to the highest eligible position among refs.
func (s *Set) lookup(refs []ref, best []int32, isDir bool) {
	for _, r := range refs {
		if best[r.m] == -2 || r.pos <= best[r.m] {
			continue
		}
		if !s.ms[r.m].patterns[r.pos].mustBeDir || isDir {
			best[r.m] = r.pos
		}
	}
}

// tryGeneral raises best[m] to the position of each pattern of gs (by
// descending position) that matches relPath, unless best[m] is -2 or
// already higher. have holds relPath's bigrams: a pattern needing one
// that is not there cannot match.
func tryGeneral(gs []gref, relPath, base string, isDir bool, have *bigrams, best []int32) {
	for k := range gs {
		g := &gs[k]
		if b := best[g.m]; b == -2 || g.pos <= b || (g.dirOnly && !isDir) || !g.need.within(have) {
			continue
		}
		if g.p.matches(relPath, base) {
			best[g.m] = g.pos
		}
	}
}
