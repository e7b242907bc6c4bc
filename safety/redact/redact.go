// Package redact finds secrets in command output and replaces them with
// "[REDACTED:<name>]" markers, in one pass over a buffer (Set.Redact) or as
// a stream under an output cap (CappedWriter).
//
// It refuses three things. It never emits a byte of output before the bytes
// around it (up to MaxSpan ahead) have been searched, so a secret split
// across two writes, or straddling the output cap, is never emitted in part:
// the cap may cut a marker, never a secret. It never reports a secret's
// value: a Finding carries a name, a label and a position. And it refuses
// operator patterns that are not valid RE2 or that match the empty string.
//
// # How text is searched
//
// Input is cut into fixed blocks of BlockSize bytes at absolute offsets.
// Block k is searched in the window that starts ContextSize bytes before it
// and ends MaxSpan bytes after it; a match is taken by the block in which it
// starts. Every builtin match begins with one of its pattern's keywords, so
// one pass finds the keywords and each pattern's expression runs anchored
// at them, over at most its own length limit (1 KiB for tokens, 4 KiB for
// headers, 8 KiB for JWTs, MaxSpan for private key blocks); operator
// patterns run over the whole window. Secret spans that overlap are merged
// into one redaction named by the earliest, longest match. A redaction that
// reaches into the next block can be extended by a match the next window
// finds across its end, which is how a private key block longer than
// MaxSpan is still covered (up to about BlockSize+MaxSpan bytes).
//
// Because the cut points depend only on absolute offsets and not on how the
// bytes arrive, streaming is exact: for every input x, every way of splitting
// x into writes, and every limit L >= 0,
//
//	w.Bytes() == r[:min(L, len(r))]  and  w.Truncated() == (len(r) > L)
//
// where r, _ := s.Redact(x), after w.Close(). So every secret whose match
// fits its pattern's length limit (never more than MaxSpan) is found
// wherever the write and block boundaries fall.
package redact

import (
	"bytes"
	"regexp"
	"slices"
	"sync"
)

const (
	// BlockSize is the unit of search: each block is searched once, in a
	// window that reaches MaxSpan bytes past it.
	BlockSize = 64 << 10
	// MaxSpan is the longest match guaranteed to be found whole however the
	// input is split. It bounds a private key block (16 KiB holds an
	// RSA-8192 PEM key, about 6.3 KiB, with room to spare).
	MaxSpan = 16 << 10
	// ContextSize is how many bytes before a block its window includes, so
	// word boundaries at the start of a block are judged correctly.
	ContextSize = 64
)

// Options changes what a Set looks for.
type Options struct {
	// Entropy adds EntropyPattern, a fallback for long high-entropy tokens
	// that no named pattern knows. Off by default: it also takes some
	// harmless identifiers.
	Entropy bool
}

// Set is a compiled pattern set. It is immutable and safe for concurrent
// use; each CappedWriter has its own state.
type Set struct {
	patterns []Pattern
	m        []matcher
	// pair marks the lower-cased first two bytes of every keyword; kw maps
	// such a pair to the keywords that start with it.
	pair *[1 << 16]bool
	kw   map[uint16][]kwRef
}

// kwRef is one keyword of one pattern.
type kwRef struct {
	pat int
	kw  []byte
}

// matcher is a pattern prepared for the block search.
type matcher struct {
	kw      [][]byte
	atHit   *regexp.Regexp // ^, one byte of context, then Re: run at a keyword
	atStart *regexp.Regexp // ^ then Re: run at a keyword at offset 0
	maxLen  int
}

func newSet(ps []Pattern) *Set {
	s := &Set{patterns: ps, m: make([]matcher, len(ps)), pair: new([1 << 16]bool), kw: map[uint16][]kwRef{}}
	for i, p := range ps {
		m := &s.m[i]
		m.maxLen = p.maxLen
		if m.maxLen <= 0 {
			m.maxLen = 1024
		}
		for _, k := range p.Keywords {
			kb := asciiLower(nil, []byte(k))
			if len(kb) < 2 {
				panic("redact: keyword shorter than two bytes in pattern " + p.Name)
			}
			m.kw = append(m.kw, kb)
			key := uint16(kb[0])<<8 | uint16(kb[1])
			s.pair[key] = true
			s.kw[key] = append(s.kw[key], kwRef{i, kb})
		}
		if len(m.kw) > 0 {
			// [\s\S] consumes exactly the byte before an ASCII keyword (an
			// ASCII byte, or part of a multi-byte rune decoded alone), so
			// \b and the like see the true preceding byte.
			m.atHit = regexp.MustCompile(`^[\s\S](?:` + p.Re.String() + `)`)
			m.atStart = regexp.MustCompile(`^(?:` + p.Re.String() + `)`)
		}
	}
	return s
}

// Compile returns the builtin patterns plus the operator's extra patterns
// (the [redaction] patterns of policy.toml), with the entropy fallback
// off.
func Compile(extra []Extra) (*Set, error) { return CompileWith(extra, Options{}) }

// CompileWith is Compile with options. An extra pattern that Check refuses
// (not valid RE2, matching the empty string, or a bad or taken name) is
// refused with a *PatternError naming its index and name, which unwraps to
// an INVALID_REQUEST *result.Error. An extra pattern with a capturing
// group redacts only its first group; without one, the whole match. Its
// matches are named by its Name, or "operator" when it has none.
func CompileWith(extra []Extra, opt Options) (*Set, error) {
	ops, err := compileExtras(extra)
	if err != nil {
		return nil, err
	}
	ps := append(slices.Clone(Builtin()), ops...)
	if opt.Entropy {
		ps = append(ps, EntropyPattern)
	}
	return newSet(ps), nil
}

// Default returns the builtin set without extras or entropy (built on
// first use).
func Default() *Set { return defaultSet() }

var defaultSet = sync.OnceValue(func() *Set { return newSet(slices.Clone(Builtin())) })

// MaxSpan returns the longest secret (whole match) that the set is
// guaranteed to catch across any write or block boundary, and that a
// CappedWriter therefore holds back before emitting.
func (s *Set) MaxSpan() int { return MaxSpan }

// Patterns returns a copy of the set's patterns, builtin first.
func (s *Set) Patterns() []Pattern { return slices.Clone(s.patterns) }

// Finding is where a secret was found. It never holds the value.
type Finding struct {
	// Name and Label are the pattern's.
	Name, Label string
	// Line is the 1-based line on which the secret starts.
	Line int
	// Start and End are byte offsets of the redacted span in the input.
	Start, End int
}

// Marker returns the text that replaces a secret found by the pattern name.
func Marker(name string) string { return "[REDACTED:" + name + "]" }

// Redact returns b with every secret replaced by its marker, and the number
// of replacements. b is not modified.
func (s *Set) Redact(b []byte) ([]byte, int) {
	out := make([]byte, 0, len(b)+64)
	e := engine{set: s, buf: b}
	n := 0
	e.raw = func(p []byte) { out = append(out, p...) }
	e.mark = func(sp span) { out = append(out, Marker(s.patterns[sp.pat].Name)...); n++ }
	e.run(true)
	return out, n
}

// Find returns the secrets in b, in order, as names and positions only.
func (s *Set) Find(b []byte) []Finding {
	var fs []Finding
	e := engine{set: s, buf: b}
	e.raw = func([]byte) {}
	line, lineAt := 1, 0
	e.mark = func(sp span) {
		start := int(sp.start)
		line += bytes.Count(b[lineAt:start], []byte{'\n'})
		lineAt = start
		p := &s.patterns[sp.pat]
		fs = append(fs, Finding{Name: p.Name, Label: p.Label, Line: line, Start: start, End: int(sp.end)})
	}
	e.run(true)
	return fs
}

// span is a secret's byte range, in absolute input offsets, and the index of
// the pattern that names it.
type span struct {
	start, end int64
	pat        int
}

// engine runs the block search over buf, which holds input bytes from
// absolute offset off. It reports output through raw and mark, in order.
type engine struct {
	set  *Set
	buf  []byte
	off  int64
	raw  func([]byte)
	mark func(span)
	stop bool // set by the sink: no more output is wanted

	blockStart int64 // next block to search
	emitPos    int64 // input before this has been reported
	carry      span  // a redaction that may still grow into the next block
	hasCarry   bool

	spans []span
	hits  [][]int // per pattern: window offsets where one of its keywords starts
}

// scanKeywords fills e.hits with every keyword start at or after lo in win,
// in one pass, comparing without regard to ASCII case.
func (e *engine) scanKeywords(win []byte, lo int) {
	set := e.set
	if len(e.hits) != len(set.patterns) {
		e.hits = make([][]int, len(set.patterns))
	}
	for i := range e.hits {
		e.hits[i] = e.hits[i][:0]
	}
	if len(set.kw) == 0 {
		return
	}
	for j := lo; j+1 < len(win); j++ {
		key := uint16(lowerByte[win[j]])<<8 | uint16(lowerByte[win[j+1]])
		if !set.pair[key] {
			continue
		}
		for _, r := range set.kw[key] {
			if j+len(r.kw) <= len(win) && equalFoldASCII(win[j:j+len(r.kw)], r.kw) {
				if h := e.hits[r.pat]; len(h) == 0 || h[len(h)-1] != j {
					e.hits[r.pat] = append(h, j)
				}
			}
		}
	}
}

var lowerByte = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if c >= 'A' && c <= 'Z' {
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}()

// equalFoldASCII reports whether b lower-cased equals the lower-case kw.
func equalFoldASCII(b, kw []byte) bool {
	for i, c := range kw {
		if lowerByte[b[i]] != c {
			return false
		}
	}
	return true
}

// at runs the anchored expression for a keyword found at win[h:]. It
// returns the submatch indexes relative to win[off:], or nil.
func (m *matcher) at(win []byte, h int) ([]int, int) {
	end := min(h+m.maxLen, len(win))
	if h == 0 {
		return m.atStart.FindSubmatchIndex(win[:end]), 0
	}
	mt := m.atHit.FindSubmatchIndex(win[h-1 : end])
	if mt == nil {
		return nil, 0
	}
	mt[0]++ // the whole match starts after the context byte
	return mt, h - 1
}

func (e *engine) end() int64 { return e.off + int64(len(e.buf)) }

// emitTo reports raw input from emitPos up to pos.
func (e *engine) emitTo(pos int64) {
	if pos > e.emitPos {
		e.raw(e.buf[e.emitPos-e.off : pos-e.off])
		e.emitPos = pos
	}
}

func (e *engine) finalize(sp span) {
	e.emitTo(sp.start)
	e.mark(sp)
	e.emitPos = sp.end
}

// run searches every block whose window is complete; with final, also the
// rest of the input, and reports everything.
func (e *engine) run(final bool) {
	end := e.end()
	for e.blockStart < end && !e.stop {
		if !final && end < e.blockStart+BlockSize+MaxSpan {
			return
		}
		e.block(min(e.blockStart+BlockSize, end), min(e.blockStart+BlockSize+MaxSpan, end), final)
	}
	if final && !e.stop {
		if e.hasCarry {
			e.hasCarry = false
			e.finalize(e.carry)
		}
		e.emitTo(end)
	}
}

// block searches the block [e.blockStart, blockEnd) in its window (up to
// winEnd), then redacts and emits what the block settles.
func (e *engine) block(blockEnd, winEnd int64, final bool) {
	e.spans = e.search(blockEnd, winEnd)
	if e.settle(blockEnd, final) {
		return
	}
	if e.hasCarry {
		e.emitTo(e.carry.start)
	} else {
		e.emitTo(blockEnd)
	}
	e.blockStart = blockEnd
}

// search returns the secret spans that start in the block (or continue
// the carried redaction past the previous window), sorted by start, then
// longest first, then pattern priority.
func (e *engine) search(blockEnd, winEnd int64) []span {
	bs := e.blockStart
	winStart := max(bs-ContextSize, 0)
	win := e.buf[winStart-e.off : winEnd-e.off]
	e.scanKeywords(win, int(bs-winStart))

	spans := e.spans[:0]
	var add addFunc = func(i int, ms, s, t int64) {
		sp := span{s, t, i}
		switch {
		case ms >= bs && ms < blockEnd:
			spans = append(spans, sp)
		case ms < bs && e.hasCarry && s < e.carry.end && t > e.carry.end:
			// Continues the carried redaction past the previous window.
			sp.start, sp.pat = e.carry.start, e.carry.pat
			spans = append(spans, sp)
		}
	}
	for i := range e.set.patterns {
		e.searchPattern(i, win, winStart, bs, blockEnd, add)
	}
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.start != b.start:
			return cmp64(a.start, b.start)
		case a.end != b.end:
			return cmp64(b.end, a.end)
		}
		return a.pat - b.pat
	})
	return spans
}

// searchPattern finds pattern i's matches in win, by the way its kind
// needs: the entropy and PEM walkers, Re over the whole window for a
// pattern without keywords, or Re anchored at each keyword hit.
func (e *engine) searchPattern(i int, win []byte, winStart, bs, blockEnd int64, add addFunc) {
	p, m := &e.set.patterns[i], &e.set.m[i]
	switch {
	case p.kind == kindEntropy:
		e.entropyRuns(i, win, winStart, bs, blockEnd, add)
	case p.kind == kindPEMBlock:
		e.pemBlocks(i, win, winStart, blockEnd, add)
	case p.kind == kindPEMTail:
		e.pemTails(i, win, winStart, add)
	case len(m.kw) == 0:
		for _, mt := range p.Re.FindAllSubmatchIndex(win, -1) {
			s, t := p.span(mt)
			if t > s && (p.Verify == nil || p.Verify(win[s:t])) {
				add(i, winStart+int64(mt[0]), winStart+int64(s), winStart+int64(t))
			}
		}
	default:
		hi := int(blockEnd - winStart)
		next := 0
		for _, h := range e.hits[i] {
			if h < next || h >= hi {
				continue
			}
			mt, off := m.at(win, h)
			if mt == nil {
				continue
			}
			s, t := p.span(mt)
			if t <= s || (p.Verify != nil && !p.Verify(win[off+s:off+t])) {
				continue
			}
			add(i, winStart+int64(h), winStart+int64(off+s), winStart+int64(off+t))
			next = off + mt[1]
		}
	}
}

// settle merges the overlapping spans of e.spans (and the carried
// redaction) and redacts each merged span that ends within the block; one
// that reaches past it is carried to the next block, unless this is the
// last. It reports whether the output stopped (the cap was reached).
func (e *engine) settle(blockEnd int64, final bool) (stopped bool) {
	cur, has := e.carry, e.hasCarry
	e.hasCarry = false
	for _, sp := range e.spans {
		if has && sp.start < cur.end {
			cur.end = max(cur.end, sp.end)
			continue
		}
		if has {
			e.finalize(cur)
			if e.stop {
				return true
			}
		}
		cur, has = sp, true
	}
	last := final && blockEnd == e.end()
	if has {
		if cur.end <= blockEnd || last {
			e.finalize(cur)
		} else {
			e.carry, e.hasCarry = cur, true
		}
	}
	return e.stop
}

// keepFrom is the lowest absolute offset the engine still needs.
func (e *engine) keepFrom() int64 {
	return min(e.emitPos, max(e.blockStart-ContextSize, 0))
}

func cmp64(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}

func asciiLower(dst, src []byte) []byte {
	dst = slices.Grow(dst, len(src))[:len(src)]
	for i, c := range src {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// addFunc records a candidate: the pattern, where its match starts and the
// secret span, all absolute.
type addFunc func(pat int, matchStart, start, end int64)

// pemTails finds END lines of private keys that start anywhere from the
// block to the end of the window and takes the key body lines before each
// (see the private-key-tail pattern).
func (e *engine) pemTails(i int, win []byte, winStart int64, add addFunc) {
	m := &e.set.m[i]
	for _, h := range e.hits[i] {
		if h > 0 && win[h-1] != '\n' {
			continue
		}
		mt, off := m.at(win, h)
		if mt == nil {
			continue
		}
		start, body := h, false
		for p := h; p > 0 && h-p < MaxSpan; {
			q := bytes.LastIndexByte(win[:p-1], '\n') + 1
			line := bytes.TrimSuffix(win[q:p-1], []byte{'\r'})
			b64 := isBase64Line(line)
			if !b64 && !isPEMHeader(line) {
				break
			}
			body = body || (b64 && len(line) >= 16)
			start, p = q, q
		}
		if body {
			add(i, winStart+int64(start), winStart+int64(start), winStart+int64(off+mt[1]))
		}
	}
}

// pemBlocks finds private key blocks that start in the block: from a BEGIN
// line to the first END line within MaxSpan bytes, or else through the
// whole body-like lines that follow (see the private-key pattern).
func (e *engine) pemBlocks(i int, win []byte, winStart, blockEnd int64, add addFunc) {
	hi := int(blockEnd - winStart)
	next := 0
	for _, h := range e.hits[i] {
		if h < next || h >= hi {
			continue
		}
		end := min(h+MaxSpan, len(win))
		head := pemBegin.FindIndex(win[h:end])
		if head == nil {
			continue
		}
		stop := -1
		for from := h + head[1]; from < end; {
			k := bytes.Index(win[from:end], []byte("-----END"))
			if k < 0 {
				break
			}
			if m := pemEnd.FindIndex(win[from+k : end]); m != nil {
				stop = from + k + m[1]
				break
			}
			from += k + 1
		}
		if stop < 0 {
			// No END in reach: take each following line that is empty,
			// base64 or a PEM header, whole (to the window's end at most).
			stop = h + head[1]
			for stop < end && (win[stop] == '\n' || win[stop] == '\r' && stop+1 < end && win[stop+1] == '\n') {
				if win[stop] == '\r' {
					stop++
				}
				q := stop + 1
				r := bytes.IndexByte(win[q:end], '\n')
				if r < 0 {
					r = end - q
				}
				line := bytes.TrimSuffix(win[q:q+r], []byte{'\r'})
				if !isBase64Line(line) && !isPEMHeader(line) {
					break
				}
				stop = q + len(line)
			}
		}
		add(i, winStart+int64(h), winStart+int64(h), winStart+int64(stop))
		next = stop
	}
}

func isBase64Line(b []byte) bool {
	if len(b) > 200 {
		return false
	}
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// isPEMHeader matches "Proc-Type: 4,ENCRYPTED" and "DEK-Info: ..." lines.
func isPEMHeader(b []byte) bool {
	k := bytes.IndexByte(b, ':')
	if k <= 0 || k > 40 || len(b) > 240 || !(b[0] >= 'A' && b[0] <= 'Z' || b[0] >= 'a' && b[0] <= 'z') {
		return false
	}
	for _, c := range b[:k] {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

// tokenByte marks the bytes a high-entropy run is made of.
var tokenByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '+' || c == '/' || c == '_' || c == '-'
	}
	return t
}()

// entropyRuns finds whole runs of token bytes that start in the block.
func (e *engine) entropyRuns(i int, win []byte, winStart, bs, blockEnd int64, add addFunc) {
	p := &e.set.patterns[i]
	maxLen := e.set.m[i].maxLen
	lo, hi := int(bs-winStart), int(blockEnd-winStart)
	j := lo
	if j > 0 {
		// A run already under way at the block start belongs to the block
		// in which it started.
		for j < hi && tokenByte[win[j]] && tokenByte[win[j-1]] {
			j++
		}
	}
	for j < hi {
		if !tokenByte[win[j]] {
			j++
			continue
		}
		k := j
		for k < len(win) && k-j < maxLen && tokenByte[win[k]] {
			k++
		}
		end := k
		for end < len(win) && end-k < 2 && win[end] == '=' {
			end++
		}
		if k-j >= 32 && p.Verify(win[j:end]) {
			add(i, winStart+int64(j), winStart+int64(j), winStart+int64(end))
		}
		for k < len(win) && tokenByte[win[k]] { // the rest of an over-long run
			k++
		}
		j = k
	}
}
