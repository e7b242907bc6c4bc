package mcpkit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// structuredDepth bounds the nesting sortedJSON follows; deeper results
// take the decoding path.
const structuredDepth = 64

// sortedJSON returns the structured content of a result whose JSON text
// is b: byte for byte what json.Marshal gives for b decoded into a
// map[string]any (object keys sorted, every number a float64, every string
// escaped as encoding/json escapes it), which is what clients have always
// received, without building those maps. It copies what is already in that
// form and has encoding/json itself redo a number or a string that may not
// be; ok is false when b has something it does not redo byte for byte (an
// escaped or repeated key, whitespace, deep nesting, invalid JSON), and the
// caller then decodes and re-encodes b.
func sortedJSON(b []byte) (out json.RawMessage, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	c := canon{in: b, out: make([]byte, 0, len(b))}
	if !c.value(0) || c.i != len(b) {
		return nil, false
	}
	return c.out, true
}

// canon rewrites in (from i on) into out.
type canon struct {
	in  []byte
	i   int
	out []byte
}

func (c *canon) value(depth int) bool {
	if c.i >= len(c.in) || depth > structuredDepth {
		return false
	}
	switch ch := c.in[c.i]; {
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == '"':
		ok, _ := c.str()
		return ok
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || '0' <= ch && ch <= '9':
		return c.number()
	}
	return false
}

func (c *canon) literal(w string) bool {
	if !bytes.HasPrefix(c.in[c.i:], []byte(w)) {
		return false
	}
	c.out = append(c.out, w...)
	c.i += len(w)
	return true
}

// member is one "key":value of an object: its span in the buffer it was
// written to, and the length of its key (the bytes between the quotes,
// with no escape).
type member struct{ start, end, key int }

func keyOf(buf []byte, m member) []byte { return buf[m.start+1 : m.start+1+m.key] }

// object writes an object with its members in the order of their keys
// (encoding/json sorts a map's keys as strings; a key with no escape is
// its own bytes, compared bytewise).
func (c *canon) object(depth int) bool {
	c.i++ // {
	from := len(c.out)
	c.out = append(c.out, '{')
	var ms []member
	if c.i < len(c.in) && c.in[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		return true
	}
	for {
		start := len(c.out)
		if c.i >= len(c.in) || c.in[c.i] != '"' {
			return false
		}
		if ok, verbatim := c.str(); !ok || !verbatim || bytes.IndexByte(c.out[start:], '\\') >= 0 {
			return false // an escaped key, or one encoding/json would write otherwise
		}
		m := member{start: start - from, key: len(c.out) - start - 2}
		if c.i >= len(c.in) || c.in[c.i] != ':' {
			return false
		}
		c.i++
		c.out = append(c.out, ':')
		if !c.value(depth) || c.i >= len(c.in) {
			return false
		}
		m.end = len(c.out) - from
		ms = append(ms, m)
		ch := c.in[c.i]
		c.i++
		if ch == '}' {
			break
		}
		if ch != ',' {
			return false
		}
		c.out = append(c.out, ',')
	}
	written := c.out[from:]
	byKey := func(a, b member) int { return bytes.Compare(keyOf(written, a), keyOf(written, b)) }
	if !slices.IsSortedFunc(ms, byKey) {
		written = bytes.Clone(written)
		slices.SortFunc(ms, byKey)
		c.out = append(c.out[:from], '{')
		for k, m := range ms {
			if k > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, written[m.start:m.end]...)
		}
	}
	for k := 1; k < len(ms); k++ {
		if byKey(ms[k-1], ms[k]) == 0 {
			return false // a repeated key: the decoded map keeps the last
		}
	}
	c.out = append(c.out, '}')
	return true
}

func (c *canon) array(depth int) bool {
	c.i++ // [
	c.out = append(c.out, '[')
	if c.i < len(c.in) && c.in[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true
	}
	for {
		if !c.value(depth) || c.i >= len(c.in) {
			return false
		}
		ch := c.in[c.i]
		c.i++
		c.out = append(c.out, ch)
		switch ch {
		case ']':
			return true
		case ',':
		default:
			return false
		}
	}
}

// str copies a string that encoding/json would write back as it is
// (verbatim): printable ASCII other than < > & (which it escapes), valid
// UTF-8 other than U+2028 and U+2029 (which it escapes), and the escapes
// \" \\ \n \r \t (which it writes the same). Any other string is decoded
// and encoded again by encoding/json.
func (c *canon) str() (ok, verbatim bool) {
	j := c.i + 1
	for j < len(c.in) {
		ch := c.in[j]
		switch {
		case plain[ch]:
			j++
		case ch == '"':
			c.out = append(c.out, c.in[c.i:j+1]...)
			c.i = j + 1
			return true, true
		case ch == '\\' && j+1 < len(c.in) && kept[c.in[j+1]]:
			j += 2
		case ch >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(c.in[j:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return c.recodeString(), false
			}
			j += n
		default:
			return c.recodeString(), false
		}
	}
	return false, false
}

// plain are the bytes of a string encoding/json writes as they are:
// printable ASCII but for the quote, the backslash and < > &.
var plain = func() (t [256]bool) {
	for ch := byte(0x20); ch < 0x7f; ch++ {
		t[ch] = !strings.ContainsRune(`"\\<>&`, rune(ch))
	}
	return t
}()

// kept are the escapes encoding/json writes the same: \" \\ \n \r \t.
var kept = [256]bool{'"': true, '\\': true, 'n': true, 'r': true, 't': true}

// recodeString has encoding/json decode the string at i and encode it
// again.
func (c *canon) recodeString() bool {
	j := c.i + 1
	for j < len(c.in) && c.in[j] != '"' {
		if c.in[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(c.in) {
		return false
	}
	var s string
	return c.recode(j+1, &s)
}

// number copies an integer of up to 15 digits (a float64 holds it exactly
// and encoding/json writes it back digit for digit); any other number is
// decoded into a float64 and encoded again by encoding/json.
func (c *canon) number() bool {
	j := c.i
	if c.in[j] == '-' {
		j++
	}
	digits := j
	for j < len(c.in) && '0' <= c.in[j] && c.in[j] <= '9' {
		j++
	}
	n := j - digits
	if n == 0 || n > 15 || n > 1 && c.in[digits] == '0' || j < len(c.in) && bytes.IndexByte([]byte(".eE+-"), c.in[j]) >= 0 {
		for j < len(c.in) && bytes.IndexByte([]byte("0123456789.eE+-"), c.in[j]) >= 0 {
			j++
		}
		var f float64
		return c.recode(j, &f)
	}
	c.out = append(c.out, c.in[c.i:j]...)
	c.i = j
	return true
}

// recode decodes in[i:end] into v with encoding/json and appends what
// encoding/json writes for it.
func (c *canon) recode(end int, v any) bool {
	if json.Unmarshal(c.in[c.i:end], v) != nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	c.out = append(c.out, b...)
	c.i = end
	return true
}
