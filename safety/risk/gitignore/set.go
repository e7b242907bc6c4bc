package gitignore

import "strings"

// Set asks several Matchers about the same path at once, for a walker that
// carries each directory's answers down to its children. It gives, for
// every Matcher, the same answer as that Matcher's Match, but looks a base
// name up once in an index shared by all of them instead of once per
// Matcher. A Set is immutable and safe for concurrent use.
type Set struct {
	ms []*Matcher

	literal    map[string][]ref // literal base-name patterns of every Matcher
	suffix     map[string][]ref // "*literal" patterns of every Matcher, by literal
	suffixLens []suffixLen      // distinct literal lengths in suffix, with byte filters
	litLens    bitset           // lengths (mod 256) of the keys of literal
	litFirst   bitset           // first bytes of the keys of literal
}

// ref is one pattern of one Matcher of a Set.
type ref struct {
	m, pos int32
}

// suffixLen is one literal length of a Set's suffix index and the bytes its
// literals begin and end with: a base name whose bytes at those places are
// not among them cannot have a suffix of that length in the index.
type suffixLen struct {
	n           int
	first, last bitset
}

type bitset [4]uint64

func (b *bitset) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *bitset) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// literalMaybe is false when no key of the literal index can equal base.
func (s *Set) literalMaybe(base string) bool {
	return s.litLens.has(byte(len(base))) && s.litFirst.has(base[0])
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
				s.suffix[lit] = append(s.suffix[lit], ref{int32(i), pos})
			}
		}
	}
	for lit := range s.suffix {
		k := -1
		for j := range s.suffixLens {
			if s.suffixLens[j].n == len(lit) {
				k = j
			}
		}
		if k < 0 {
			k = len(s.suffixLens)
			s.suffixLens = append(s.suffixLens, suffixLen{n: len(lit)})
		}
		if lit != "" { // "*" itself: every base name ends with ""
			s.suffixLens[k].first.add(lit[0])
			s.suffixLens[k].last.add(lit[len(lit)-1])
		}
	}
	return s
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
	for i := range best {
		best[i] = -1
		if parent != nil && parent[i] >= 0 {
			best[i] = -2
		}
	}
	if relPath == "" {
		for i := range best {
			if best[i] == -2 {
				best[i] = parent[i]
			}
		}
		return
	}
	base := relPath[strings.LastIndexByte(relPath, '/')+1:]
	if s.literalMaybe(base) {
		s.lookup(s.literal[base], best, isDir)
	}
	last := base[len(base)-1]
	for _, sl := range s.suffixLens {
		if sl.n == 0 || len(base) >= sl.n && sl.last.has(last) && sl.first.has(base[len(base)-sl.n]) {
			s.lookup(s.suffix[base[len(base)-sl.n:]], best, isDir)
		}
	}
	for i, m := range s.ms {
		b := int(best[i])
		if b == -2 {
			out[i] = parent[i]
			continue
		}
		for k := len(m.general) - 1; k >= 0; k-- {
			pos := int(m.general[k])
			if pos <= b {
				break
			}
			p := &m.patterns[pos]
			if p.mustBeDir && !isDir {
				continue
			}
			if p.matches(relPath, base) {
				b = pos
				break
			}
		}
		if b >= 0 && !m.patterns[b].negate {
			out[i] = int32(m.patterns[b].line)
		} else {
			out[i] = -1
		}
	}
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
