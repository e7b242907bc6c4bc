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
// starts. Matches (their secret parts) that overlap are merged into one
// redaction named by the earliest, longest match. A redaction that reaches
// into the next block can be extended by a match the next window finds that
// overlaps its end, which is how a private key block longer than MaxSpan is
// still covered (up to about BlockSize+MaxSpan bytes).
//
// Because the cut points depend only on absolute offsets and not on how the
// bytes arrive, streaming is exact: for every input x, every way of splitting
// x into writes, and every limit L >= 0,
//
//	w.Bytes() == r[:min(L, len(r))]  and  w.Truncated() == (len(r) > L)
//
// where r, _ := s.Redact(x), after w.Close(). Every secret whose match is at
// most MaxSpan bytes long is found wherever the write and block boundaries
// fall.
package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"

	"github.com/bastion-mcp/bastion/safety/result"
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
}

// Compile returns the builtin patterns plus the operator's extra regular
// expressions (the [redaction] patterns of policy.toml), with the entropy
// fallback off.
func Compile(extra []string) (*Set, error) { return CompileWith(extra, Options{}) }

// CompileWith is Compile with options. An extra pattern that is not valid
// RE2 syntax, or that matches the empty string, is refused with an
// INVALID_REQUEST *result.Error naming its index. An extra pattern with a
// capturing group redacts only its first group; without one, the whole
// match. Extra matches are named "operator".
func CompileWith(extra []string, opt Options) (*Set, error) {
	ps := slices.Clone(Builtin)
	for i, src := range extra {
		if src == "" {
			return nil, result.New(result.InvalidRequest,
				fmt.Sprintf("[redaction] patterns[%d] is empty", i))
		}
		re, err := regexp.Compile(src)
		if err != nil {
			why := "invalid syntax"
			if se, ok := err.(*syntax.Error); ok {
				why = se.Code.String()
			}
			return nil, result.Wrap(result.InvalidRequest,
				fmt.Sprintf("[redaction] patterns[%d] is not a valid RE2 regular expression: %s", i, why), err)
		}
		if re.MatchString("") {
			return nil, result.New(result.InvalidRequest,
				fmt.Sprintf("[redaction] patterns[%d] matches the empty string, so it would redact nothing or everything", i))
		}
		p := Pattern{Name: "operator", Label: fmt.Sprintf("operator pattern %d", i), Re: re}
		if re.NumSubexp() > 0 {
			p.Group = 1
		}
		ps = append(ps, p)
	}
	if opt.Entropy {
		ps = append(ps, EntropyPattern)
	}
	return &Set{patterns: ps}, nil
}

// Default is the builtin set without extras or entropy.
var Default = &Set{patterns: slices.Clone(Builtin)}

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

	lower []byte
	spans []span
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

func (e *engine) block(blockEnd, winEnd int64, final bool) {
	bs := e.blockStart
	winStart := max(bs-ContextSize, 0)
	win := e.buf[winStart-e.off : winEnd-e.off]
	e.lower = asciiLower(e.lower[:0], win)

	spans := e.spans[:0]
	for i := range e.set.patterns {
		p := &e.set.patterns[i]
		if len(p.Keywords) > 0 && !containsAny(e.lower, p.Keywords) {
			continue
		}
		for _, m := range p.Re.FindAllSubmatchIndex(win, -1) {
			s, t := p.span(m)
			if t <= s || (p.Verify != nil && !p.Verify(win[s:t])) {
				continue
			}
			ms := winStart + int64(m[0])
			sp := span{winStart + int64(s), winStart + int64(t), i}
			switch {
			case ms >= bs && ms < blockEnd:
				spans = append(spans, sp)
			case ms < bs && e.hasCarry && sp.start < e.carry.end && sp.end > e.carry.end:
				// Continues the carried redaction past the previous window.
				sp.start, sp.pat = e.carry.start, e.carry.pat
				spans = append(spans, sp)
			}
		}
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
	e.spans = spans

	cur, has := e.carry, e.hasCarry
	e.hasCarry = false
	for _, sp := range spans {
		if has && sp.start < cur.end {
			cur.end = max(cur.end, sp.end)
			continue
		}
		if has {
			e.finalize(cur)
			if e.stop {
				return
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
	if e.stop {
		return
	}
	if e.hasCarry {
		e.emitTo(e.carry.start)
	} else {
		e.emitTo(blockEnd)
	}
	e.blockStart = blockEnd
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

func containsAny(b []byte, kws []string) bool {
	for _, k := range kws {
		if bytes.Contains(b, []byte(k)) {
			return true
		}
	}
	return false
}
