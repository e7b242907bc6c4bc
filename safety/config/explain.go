package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// This file turns what the TOML decoder and the validators say into the
// person's words: the file, the line, the key as they wrote it, what the
// key takes (never a Go type name), and for a misspelt key the key they
// probably meant.

// keyPos is where one key, or one table header, stands in a policy file.
type keyPos struct {
	path       []string // the key's path, without array-of-tables indexes
	name       string   // the dotted key with indexes: organizer.skip[1].layer
	line       int
	start, end int    // byte range of the whole key = value (0, 0 for a header)
	value      string // the value as written, for a scalar ("" otherwise)
}

// keyIndex lists the keys of one policy document in the order written.
type keyIndex []keyPos

// indexKeys reads where each key of doc stands. A document the parser
// refuses is indexed up to the refusal (the decoder then reports it).
func indexKeys(doc []byte) keyIndex {
	var ix keyIndex
	p := unstable.Parser{}
	p.Reset(doc)
	var prefix []string
	prefixName := ""
	count := map[string]int{}
	var starts []int // byte offset of each line after the first
	for i, c := range doc {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	line := func(off int) int { return 1 + sort.SearchInts(starts, off+1) }
	var walkKV func(n *unstable.Node, base []string, baseName string)
	walkKV = func(n *unstable.Node, base []string, baseName string) {
		keys := keyParts(n.Key())
		path := append(append([]string{}, base...), keys...)
		name := join(baseName, strings.Join(keys, "."))
		kp := keyPos{path: path, name: name, line: line(int(n.Raw.Offset)),
			start: int(n.Raw.Offset), end: int(n.Raw.Offset + n.Raw.Length)}
		v := n.Value()
		switch v.Kind {
		case unstable.InlineTable:
			ix = append(ix, kp)
			for it := v.Children(); it.Next(); {
				if c := it.Node(); c.Kind == unstable.KeyValue {
					walkKV(c, path, name)
				}
			}
			return
		case unstable.Array:
			ix = append(ix, kp)
			i := 0
			for it := v.Children(); it.Next(); {
				c := it.Node()
				if c.Kind == unstable.Comment {
					continue
				}
				if c.Kind == unstable.InlineTable {
					for jt := c.Children(); jt.Next(); {
						if d := jt.Node(); d.Kind == unstable.KeyValue {
							walkKV(d, path, fmt.Sprintf("%s[%d]", name, i))
						}
					}
				}
				i++
			}
			return
		}
		if v.Raw.Length > 0 {
			kp.value = string(doc[v.Raw.Offset : v.Raw.Offset+v.Raw.Length])
		}
		ix = append(ix, kp)
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			prefix = keyParts(e.Key())
			prefixName = strings.Join(prefix, ".")
			off := 0
			if it := e.Key(); it.Next() {
				off = int(it.Node().Raw.Offset)
			}
			if e.Kind == unstable.ArrayTable {
				n := count[prefixName]
				count[prefixName]++
				ix = append(ix, keyPos{path: prefix, name: prefixName, line: line(off)})
				prefixName = fmt.Sprintf("%s[%d]", prefixName, n)
			}
			ix = append(ix, keyPos{path: prefix, name: prefixName, line: line(off)})
		case unstable.KeyValue:
			walkKV(e, prefix, prefixName)
		}
	}
	return ix
}

func keyParts(it unstable.Iterator) []string {
	var out []string
	for it.Next() {
		out = append(out, string(it.Node().Data))
	}
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// line returns the line where key (dotted, indexes optional) is first
// written, as a key or a table header; 0 when it is not in the file.
func (ix keyIndex) line(key string) int {
	for _, k := range ix {
		if k.name == key {
			return k.line
		}
	}
	for _, k := range ix {
		if strings.Join(k.path, ".") == key {
			return k.line
		}
	}
	return 0
}

// at returns the innermost key = value whose text holds the byte offset.
func (ix keyIndex) at(off int) (keyPos, bool) {
	best, ok := keyPos{}, false
	for _, k := range ix {
		if k.end > k.start && k.start <= off && off < k.end && (!ok || k.end-k.start <= best.end-best.start) {
			best, ok = k, true
		}
	}
	return best, ok
}

// offsetOf turns a 1-based row and column into a byte offset of doc.
func offsetOf(doc []byte, row, col int) int {
	off := 0
	for r := 1; r < row; r++ {
		i := bytes.IndexByte(doc[off:], '\n')
		if i < 0 {
			return len(doc)
		}
		off += i + 1
	}
	return min(off+col-1, len(doc))
}

// fieldType returns the Go type that the key at path decodes into.
func fieldType(path []string) (reflect.Type, bool) {
	t := reflect.TypeOf(Policy{})
	for _, name := range path {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
			continue
		case reflect.Struct:
		default:
			return nil, false
		}
		f, ok := fieldByTag(t, name)
		if !ok {
			return nil, false
		}
		t = f.Type
	}
	return t, true
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.IsExported() && tag == name && tag != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// keysOf lists the keys a table of type t takes, in declaration order.
func keysOf(t reflect.Type) []string {
	for t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.IsExported() && tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

var textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()

// describe says what a value of type t is written as, in TOML words.
func describe(t reflect.Type, key string) string {
	if reflect.PointerTo(t).Implements(textUnmarshaler) && t.Kind() == reflect.Struct {
		return fmt.Sprintf("a string or a table with the keys %s", strings.Join(keysOf(t), ", "))
	}
	switch t.Kind() {
	case reflect.String:
		return "a string in quotes"
	case reflect.Bool:
		return "true or false (without quotes)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number (without quotes)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		e := t.Elem()
		switch {
		case e.Kind() == reflect.Struct && !reflect.PointerTo(e).Implements(textUnmarshaler):
			return fmt.Sprintf("a list of tables: one [[%s]] section per entry, each with some of the keys %s", key, strings.Join(keysOf(e), ", "))
		case e.Kind() == reflect.String:
			return `a list of strings, like ["a", "b"]`
		}
		return "a list of " + plural(describe(e, key))
	case reflect.Map:
		return fmt.Sprintf("a table whose values are each %s", describe(t.Elem(), key))
	case reflect.Struct:
		return fmt.Sprintf("a table: a [%s] section with some of the keys %s", key, strings.Join(keysOf(t), ", "))
	}
	return "another kind of value"
}

func plural(s string) string { return strings.TrimPrefix(strings.TrimPrefix(s, "a "), "an ") }

// tomlKind matches what the decoder says it found.
var tomlKind = regexp.MustCompile(`cannot decode TOML ([a-zA-Z -]+?) into`)

// found names the kind of value the decoder met, from its message.
func found(msg string) string {
	m := tomlKind.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	switch k := m[1]; k {
	case "string":
		return "a string"
	case "integer":
		return "an integer"
	case "float", "boolean":
		return "a " + k
	case "array":
		return "a list"
	case "inline table", "table":
		return "a table"
	default:
		return "a " + k
	}
}

// goWords matches the parts of a decoder message that speak Go.
var goWords = regexp.MustCompile(`struct field|of type|\bconfig\.|\[\]string|map\[|\bint\b`)

// explainDecode rewrites a decoding error of doc in the person's words.
// Each problem is one "line N: ..." phrase; file, when not empty, leads.
func explainDecode(doc []byte, ix keyIndex, err error) error {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) {
		var out []string
		for _, e := range sm.Errors {
			row, _ := e.Position()
			path, name := []string(e.Key()), strings.Join(e.Key(), ".")
			// The decoder leaves out the list a table inside a list
			// belongs to ([redaction] patterns = [{...}]); the index has it.
			for _, k := range ix {
				if k.line == row && len(path) > 0 && len(k.path) >= len(path) && k.path[len(k.path)-1] == path[len(path)-1] {
					path, name = k.path, k.name
					break
				}
			}
			out = append(out, fmt.Sprintf("line %d: %s", row, unknownKey(path, name)))
		}
		return errors.New(strings.Join(out, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		kp, ok := ix.at(offsetOf(doc, row, col))
		if ok {
			if t, known := fieldType(kp.path); known && tomlKind.MatchString(msg) {
				s := fmt.Sprintf("line %d: %s must be %s", row, kp.name, describe(t, strings.Join(kp.path, ".")))
				if f := found(msg); f != "" {
					s += ", not " + f
					if kp.value != "" && utf8.RuneCountInString(kp.value) <= 40 {
						s += " (" + kp.value + ")"
					}
				}
				return errors.New(s)
			}
			if goWords.MatchString(msg) {
				return fmt.Errorf("line %d: %s has a value of the wrong kind", row, kp.name)
			}
			return fmt.Errorf("line %d, column %d: %s: %s", row, col, kp.name, msg)
		}
		if goWords.MatchString(msg) {
			return fmt.Errorf("line %d, column %d: a value of the wrong kind", row, col)
		}
		return fmt.Errorf("line %d, column %d: %s", row, col, msg)
	}
	return fmt.Errorf("not valid TOML: %v", err)
}

// unknownKey says that the key at path is not a policy key, with the key
// meant when one is close, and the keys its table takes.
func unknownKey(path []string, name string) string {
	parent, ok := fieldType(path[:len(path)-1])
	keys := keysOf(parent)
	if !ok || len(keys) == 0 {
		return fmt.Sprintf("unknown key %s", name)
	}
	s := fmt.Sprintf("unknown key %s", name)
	if m := closest(path[len(path)-1], keys); m != "" {
		s += fmt.Sprintf(" (did you mean %q?)", m)
	}
	where := "the top level"
	if len(path) > 1 {
		where = "[" + strings.Join(path[:len(path)-1], ".") + "]"
	}
	return s + fmt.Sprintf("; %s takes %s", where, strings.Join(keys, ", "))
}

// closest returns the candidate nearest to s by edit distance, when it is
// near enough to be a misspelling (at most 2 edits, or a third of s), or
// differs only in case; "" otherwise.
func closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	sorted := append([]string{}, candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if strings.EqualFold(c, s) {
			return c
		}
		if d := editDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= 2 || bestD <= len(s)/3 {
		return best
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of neighbours.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// keyFatalf is Fatalf for a problem with one policy key (dotted, with
// array indexes: organizer.skip[1].layer): Load and Locate then place it
// in the file.
func keyFatalf(key, format string, args ...any) error {
	return &Fatal{Msg: fmt.Sprintf(format, args...), Key: key}
}

// KeyFatalf is keyFatalf for other packages that check a policy key
// (safety/organize checks [[organizer.skip]]): Policy.Locate places it.
func KeyFatalf(key, format string, args ...any) error { return keyFatalf(key, format, args...) }

// Locate places a Fatal about one key (see KeyFatalf) in the policy: it
// leads with "policy file F, line N: " when the key is written in the
// file, or names the environment variable that set it. Any other error is
// returned as it is.
func (p *Policy) Locate(err error) error {
	var f *Fatal
	if p == nil || !errors.As(err, &f) || f.Key == "" || f.placed {
		return err
	}
	where := ""
	base, _, _ := strings.Cut(f.Key, "[")
	if env := p.fromEnv[base]; env != "" {
		where = "$" + env + " (it overrides " + base + ")"
	} else if p.File != "" {
		if l := p.keys.line(f.Key); l > 0 {
			where = fmt.Sprintf("policy file %s, line %d", p.File, l)
		} else if l := p.keys.line(base); l > 0 {
			where = fmt.Sprintf("policy file %s, line %d", p.File, l)
		} else {
			where = "policy file " + p.File
		}
	}
	if where == "" {
		return err
	}
	return &Fatal{Msg: where + ": " + f.Msg, Err: f.Err, Key: f.Key, placed: true}
}

// meant returns ` (did you mean "x"?)` when value is a misspelling of one
// of the allowed values, else "".
func meant(value string, allowed []string) string {
	if m := closest(value, allowed); m != "" && m != value {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}
