package risk

import (
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strings"
)

// PlaceholderReason is the reason a descriptor gives when the content
// scanner lowered a file that its name made HIGH_RISK.
const PlaceholderReason = "every value is a placeholder"

// placeholderKind is the Finding kind of a placeholder proof.
const placeholderKind = "placeholders"

// ContentInfo is a rule file's [content] table.
type ContentInfo struct {
	// LowerPlaceholders, set to false, turns placeholder lowering off for
	// every root the file applies to: a file that is RISK by name stays
	// HIGH_RISK even when every value in it is a placeholder. Setting it
	// to true changes nothing (lowering is on unless a file turns it
	// off), so a project file can turn lowering off but never back on.
	LowerPlaceholders *bool `toml:"lower_placeholders"`
}

// lowering reports whether placeholder lowering is on for this root: no
// rule file in force turned it off.
func (st *rootState) lowering() bool {
	for _, s := range st.sets {
		if v := s.Content.LowerPlaceholders; v != nil && !*v {
			return false
		}
	}
	return true
}

// withPlaceholderProof replaces the findings of a whole file (data holds
// all of it) by a placeholder proof when the scanner understands the
// file's format entirely and every value in it is a placeholder: then no
// secret shape it matched is a secret. Other findings (headers, keyword
// counts) are kept. Anything else returns findings unchanged.
func withPlaceholderProof(rel string, data []byte, findings []Finding) []Finding {
	if !placeholdersOnly(rel, data) {
		return findings
	}
	out := []Finding{{Kind: placeholderKind, Label: PlaceholderReason}}
	for _, f := range findings {
		if !f.Risk && f.Kind != "credential" && f.Kind != "secret" {
			out = append(out, f)
		}
	}
	return out
}

// lowerForPlaceholders lowers a RISK-by-name descriptor to NORMAL when
// findings hold a placeholder proof; the proof's reason comes first.
func lowerForPlaceholders(md *Metadata, findings []Finding) {
	for _, f := range findings {
		if f.Kind == placeholderKind && md.Category == string(Risk) {
			md.Category = CategoryNone
			md.Importance = Normal
			md.SuggestedAction = CarefulEdit
			rest := slices.DeleteFunc(md.Reasons, func(r string) bool { return r == PlaceholderReason })
			md.Reasons = append([]string{PlaceholderReason}, rest...)
			return
		}
	}
}

// kvFormat names the key/value format the scanner reads rel as: "json",
// "yaml", "ini" (TOML, INI, .properties and friends), "env", or "".
func kvFormat(rel string) string {
	base := strings.ToLower(path.Base(rel))
	switch ext := path.Ext(base); {
	case ext == ".json":
		return "json"
	case ext == ".yaml" || ext == ".yml":
		return "yaml"
	case ext == ".toml" || ext == ".ini" || ext == ".cfg" || ext == ".conf" || ext == ".properties":
		return "ini"
	case strings.HasPrefix(base, ".env") || ext == ".env" || base == ".envrc":
		return "env"
	}
	return ""
}

// placeholdersOnly reports whether data, in rel's key/value format, is
// entirely understood and holds at least one value, every one of them a
// placeholder.
func placeholdersOnly(rel string, data []byte) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	switch f := kvFormat(rel); f {
	case "json":
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&v) != nil || dec.More() {
			return false
		}
		n, ok := jsonPlaceholders(v, 0)
		return ok && n > 0
	case "":
		return false
	default:
		n, ok := linePlaceholders(string(data), f)
		return ok && n > 0
	}
}

// jsonPlaceholders walks a decoded JSON value: every string must be a
// placeholder (a key must not look like a secret), null is an empty value;
// numbers and booleans are not placeholders. n counts the placeholder
// strings.
func jsonPlaceholders(v any, depth int) (n int, ok bool) {
	if depth > 16 {
		return 0, false
	}
	switch t := v.(type) {
	case nil:
		return 0, true
	case string:
		return 1, placeholderValue(t)
	case map[string]any:
		for k, x := range t {
			if looksSecret(k) {
				return 0, false
			}
			m, ok := jsonPlaceholders(x, depth+1)
			if !ok {
				return 0, false
			}
			n += m
		}
		return n, true
	case []any:
		for _, x := range t {
			m, ok := jsonPlaceholders(x, depth+1)
			if !ok {
				return 0, false
			}
			n += m
		}
		return n, true
	}
	return 0, false
}

// kvKey is a key the line formats accept: plain words, no spaces.
var kvKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// linePlaceholders reads a .env, INI-ish or flat YAML file line by line.
// Every line must be blank, a comment, a section header (INI only) or
// "key<sep>value" with a single-line value; a line it cannot read so
// (indented YAML, a list, an open quote) makes the file not understood.
func linePlaceholders(text, format string) (n int, ok bool) {
	sep := "="
	if format == "yaml" {
		sep = ":"
	}
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		switch {
		case line == "" || line[0] == '#' || (format == "ini" && line[0] == ';'):
			continue
		case format == "ini" && line[0] == '[' && line[len(line)-1] == ']':
			continue
		case format == "yaml" && (line == "---" || raw[0] == ' ' || raw[0] == '\t'):
			if line == "---" {
				continue
			}
			return 0, false
		}
		if format == "env" {
			line = strings.TrimPrefix(line, "export ")
		}
		j := strings.Index(line, sep)
		if j <= 0 {
			return 0, false
		}
		key := strings.Trim(strings.TrimSpace(line[:j]), `"`)
		if !kvKey.MatchString(key) || looksSecret(key) {
			return 0, false
		}
		val, ok := scalarValue(strings.TrimSpace(line[j+len(sep):]), format)
		if !ok || !placeholderValue(val) {
			return 0, false
		}
		n++
	}
	return n, true
}

// scalarValue reads one value: a quoted string closed on its line
// (followed by nothing but a comment), or an unquoted word with an
// optional " #" comment. YAML block and flow values are not understood.
func scalarValue(v, format string) (string, bool) {
	if v == "" {
		return "", format != "yaml"
	}
	if q := v[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(v[1:], q)
		if end < 0 {
			return "", false
		}
		rest := strings.TrimSpace(v[end+2:])
		return v[1 : end+1], rest == "" || rest[0] == '#'
	}
	if c := strings.Index(v, " #"); c >= 0 {
		v = strings.TrimSpace(v[:c])
	}
	if format == "yaml" && strings.ContainsAny(v[:1], "|>[{&*!") {
		return "", false
	}
	return v, true
}

// placeholderLike are the values that stand for a secret in templates
// and docs: a variable reference (${VAR}, $VAR, {{ var }}), an
// angle-bracketed name (<api-key>), "changeme" and its kin, a run of at
// least three x's, stars or dots, and "your-api-key-here" phrases. Short
// values ("x", "1") and plausible weak passwords ("password", "test") are
// not placeholders: they may be the real thing.
var placeholderLike = regexp.MustCompile(`(?i)^(?:` +
	`\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=?+][^}]*)?\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{[^{}]*\}\}|%[A-Za-z_][A-Za-z0-9_]*%|<[^<>]+>|` +
	`x{3,}(?:[-_]x+)*|\*{3,}|\.{3,}|` +
	`change[-_]?me|change[-_]?this|replace[-_]?me|fill[-_]?me[-_]?in|to[-_]?be[-_]?filled|todo|tbd|fixme|placeholder|redacted|\[redacted\]|` +
	`your[-_ ][-_ a-z0-9]*|your[a-z]*(?:key|secret|token|password|here|id)|(?:insert|put|enter|add)[-_ ][-_ a-z0-9]*` +
	`)$`)

// vendorExamples are the example credentials of vendors' documentation,
// published so that they can be pasted into examples; none of them grants
// access to anything.
var vendorExamples = map[string]bool{
	// AWS (docs and SDK examples).
	"AKIAIOSFODNN7EXAMPLE":                     true,
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": true,
	// Stripe (API reference test keys).
	"sk_test_4eC39HqLyjWDarjtT1zdp7dc": true,
	"pk_test_TYooMQauvdEDq54NiTphI7jx": true,
	"sk_test_BQokikJOvBiI2HlWgH4olfQ2": true,
	"pk_test_6pRNASCoBOKtIshFeQd4XMUh": true,
}

// awsExample matches the rest of AWS's documentation family: access key
// ids ending in EXAMPLE and secret keys ending in EXAMPLEKEY.
var awsExample = regexp.MustCompile(`^(?:(?:AKIA|ASIA)[A-Z0-9]{8,12}EXAMPLE|[A-Za-z0-9/+]{20,40}EXAMPLEKEY)$`)

// placeholderValue reports whether v, one unquoted value, proves nothing
// secret: empty, a placeholder word or variable reference, or a vendor's
// documented example key.
func placeholderValue(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || placeholderLike.MatchString(v) || vendorExamples[v] || awsExample.MatchString(v)
}
