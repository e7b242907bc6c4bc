package redact

import (
	"unicode/utf8"
)

// Neutralising shows a command's terminal control characters as visible
// escapes, so output a client prints in a terminal cannot write its
// clipboard (OSC 52), plant links (OSC 8), move the cursor over text it
// shows (CSI), ring, erase or reorder what a person reads. What is shown
// as an escape, and how:
//
//   - every C0 control but newline and tab (so ESC, CR, BEL, BS, NUL...)
//     and DEL, as \xNN: ESC is \x1b, CR \x0d, NUL \x00, DEL \x7f;
//   - the C1 controls U+0080..U+009F, written as UTF-8, as \u0080..\u009f;
//   - the bidirectional controls U+061C, U+200E, U+200F, U+202A..U+202E and
//     U+2066..U+2069 (Unicode's Bidi_Control set), as \u202e and the like;
//   - every byte that is not part of valid UTF-8 (a stray 0x9b, which an
//     8-bit terminal takes for CSI, Latin-1 text, a cut or overlong
//     sequence, an encoded surrogate), as \xNN, byte by byte.
//
// Everything else passes unchanged, including every valid UTF-8 rune that
// is not one of the above (CJK, emoji and their joiners, combining marks).
// Only the control character itself is replaced: the bytes of an escape
// sequence after ESC are printable and stay, so "\x1b[31m" reads as such.
// A backslash is not escaped: the text \x1b a command prints itself looks
// like a neutralised ESC, which is harmless (detail.neutralised counts
// only the real ones).
//
// A neutraliser is streaming: a UTF-8 rune split between two writes is
// held (at most 3 bytes) until the next write completes or breaks it, so
// the result does not depend on how the output was chunked.
type neutraliser struct {
	pend  [utf8.UTFMax]byte
	n     int
	ubuf  [6]byte      // the \uNNNN escape being shown
	plain func([]byte) // bytes passed through unchanged
	esc   func([]byte) // one visible escape, whole
}

// hexDigits are the digits of the escapes.
const hexDigits = "0123456789abcdef"

// isBidiControl reports whether r is one of Unicode's Bidi_Control
// characters: the embeddings, overrides and isolates, and the marks.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// feed neutralises p, holding an incomplete rune at its end for the next
// call.
func (z *neutraliser) feed(p []byte) {
	if z.n > 0 {
		// Complete the held rune with at most the bytes it can need.
		var tmp [2 * utf8.UTFMax]byte
		k := min(len(p), utf8.UTFMax)
		t := append(append(tmp[:0], z.pend[:z.n]...), p[:k]...)
		c := z.scan(t, false)
		if c == 0 { // still a prefix of a rune: p was too short
			z.n = copy(z.pend[:], t)
			return
		}
		// scan consumed every held byte (a held prefix is either
		// completed or broken byte by byte), and c-n of p's.
		p = p[c-z.n:]
		z.n = 0
	}
	c := z.scan(p, false)
	z.n = copy(z.pend[:], p[c:])
}

// flush neutralises the held bytes: at the end of the stream an
// incomplete rune is invalid UTF-8.
func (z *neutraliser) flush() {
	if z.n > 0 {
		z.scan(z.pend[:z.n], true)
		z.n = 0
	}
}

// byteEscapes holds \xNN for every byte, so showing one allocates nothing.
var byteEscapes = func() (t [256][4]byte) {
	for i := range t {
		t[i] = [4]byte{'\\', 'x', hexDigits[i>>4], hexDigits[i&0xf]}
	}
	return t
}()

// plainASCII marks the bytes that pass unchanged without decoding:
// printable ASCII, newline and tab.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	t['\n'], t['\t'] = true, true
	return t
}()

// scan neutralises b and returns how many bytes it consumed: all of them,
// or, unless final, all but a trailing prefix of a valid rune (at most 3
// bytes) that the next bytes may complete.
func (z *neutraliser) scan(b []byte, final bool) int {
	start, i := 0, 0
	for i < len(b) {
		c := b[i]
		if plainASCII[c] {
			i++
			continue
		}
		size := 1
		var esc []byte
		if c < 0x80 { // C0 and DEL
			esc = byteEscapes[c][:]
		} else {
			if !final && !utf8.FullRune(b[i:]) {
				break
			}
			var r rune
			r, size = utf8.DecodeRune(b[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				esc = byteEscapes[c][:]
			case r <= 0x9f || isBidiControl(r):
				z.ubuf = [6]byte{'\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf]}
				esc = z.ubuf[:]
			default:
				i += size
				continue
			}
		}
		if start < i {
			z.plain(b[start:i])
		}
		z.esc(esc)
		i += size
		start = i
	}
	if start < i {
		z.plain(b[start:i])
	}
	return i
}

// Neutralise returns b with every terminal control character shown as a
// visible escape (see the list at neutraliser), and how many it replaced.
// b is not modified. It is what the writers of NewOutputWriter do to a
// whole stream, in one call.
func Neutralise(b []byte) ([]byte, int) {
	out := make([]byte, 0, len(b))
	n := 0
	z := neutraliser{plain: func(p []byte) { out = append(out, p...) },
		esc: func(e []byte) { out = append(out, e...); n++ }}
	z.feed(b)
	z.flush()
	return out, n
}
