package risk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/redact"
)

// Finding is one thing the content scanner noticed. Its Label never holds
// file content beyond a short allow-listed word (an interpreter name, a
// URL scheme's product name, a sanitised key name).
type Finding struct {
	// Line is 1-based; 0 for whole-file findings (keyword density).
	Line int `json:"line"`
	// Kind is "secret", "credential", "header", "keywords" or, for a
	// whole key/value file whose every value is a placeholder (the proof
	// that lowers a RISK-by-name file), "placeholders".
	Kind string `json:"kind"`
	// Label is the human words: "PostgreSQL connection string with a password".
	Label string `json:"label"`
	// Risk is set when the finding alone makes the file HIGH_RISK.
	Risk bool `json:"risk"`
}

// Reason renders the finding for Metadata.Reasons: "line 3: ...".
func (f Finding) Reason() string {
	if f.Line > 0 {
		return fmt.Sprintf("line %d: %s", f.Line, f.Label)
	}
	return f.Label
}

// DefaultScanBytes is how much of a file the scanner reads by default.
const DefaultScanBytes = 4096

// ScanContent scans data (the first bytes of the file rel) and reports
// what it found, with the builtin secret patterns (an Engine adds the
// operator's, Options.Patterns). binary is true, and nothing is scanned,
// when data holds a NUL byte.
func ScanContent(rel string, data []byte) (findings []Finding, binary bool) {
	return scanContent(redact.Default(), rel, data)
}

// scanContent is ScanContent with the secret pattern set to use.
func scanContent(secrets *redact.Set, rel string, data []byte) (findings []Finding, binary bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, true
	}
	lines := newLineIndex(data)
	add := func(f Finding) {
		for _, g := range findings {
			if g.Line == f.Line && g.Label == f.Label {
				return
			}
		}
		findings = append(findings, f)
	}
	// Headers.
	if bytes.HasPrefix(data, []byte("#!")) {
		add(Finding{Line: 1, Kind: "header", Label: "executable script (" + interpreter(data) + ")"})
	}
	if bytes.HasPrefix(data, []byte("<?php")) {
		add(Finding{Line: 1, Kind: "header", Label: "PHP code"})
	}
	// Structure probe of config formats (first, so a generic
	// "name = value" secret on a line the probe already judged is not
	// reported twice).
	probed := map[int]bool{}
	for _, f := range probeStructure(rel, data, lines) {
		probed[f.Line] = true
		add(f)
	}
	// Secret shapes: the redactor's pattern table, one set for both uses.
	for _, f := range secretFindings(secrets, data) {
		if f.generic && probed[f.Line] {
			continue
		}
		add(f.Finding)
	}
	// Keyword density.
	if k := keywordSummary(data); k != "" {
		add(Finding{Kind: "keywords", Label: k})
	}
	sort.SliceStable(findings, func(i, j int) bool {
		if findings[i].Line != findings[j].Line {
			return findings[i].Line < findings[j].Line
		}
		return findings[i].Label < findings[j].Label
	})
	return findings, false
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex []int

func newLineIndex(data []byte) lineIndex {
	idx := lineIndex{0}
	for i, c := range data {
		if c == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

func (li lineIndex) line(off int) int {
	return sort.Search(len(li), func(i int) bool { return li[i] > off })
}

// interpreter names the shebang's interpreter if it is a known one.
func interpreter(data []byte) string {
	first := data
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	fields := strings.Fields(strings.TrimPrefix(string(first), "#!"))
	if len(fields) == 0 {
		return "an interpreter"
	}
	name := path.Base(fields[0])
	if name == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				name = path.Base(f)
				break
			}
		}
	}
	if knownInterpreter(name) {
		return "interpreter: " + name
	}
	return "an interpreter"
}

// knownInterpreter reports whether name, as written after #!, is a
// spelling that command.Programs lists for a shell, interpreter or tool:
// only such table words are echoed in a label, never other file content.
func knownInterpreter(name string) bool {
	p, ok := command.Lookup(name)
	return ok && p.Kind != command.Wrapper && (name == p.Name || slices.Contains(p.Typed, name))
}

var schemes = map[string]string{
	"postgres": "PostgreSQL connection string", "postgresql": "PostgreSQL connection string",
	"mysql": "MySQL connection string", "mariadb": "MariaDB connection string",
	"mongodb": "MongoDB connection string", "mongodb+srv": "MongoDB connection string",
	"redis": "Redis connection string", "rediss": "Redis connection string",
	"amqp": "AMQP connection string", "amqps": "AMQP connection string",
	"mssql": "SQL Server connection string", "sqlserver": "SQL Server connection string",
	"jdbc:postgresql": "PostgreSQL connection string", "jdbc:mysql": "MySQL connection string",
	"ftp": "FTP URL", "sftp": "SFTP URL", "smtp": "SMTP URL", "smtps": "SMTP URL",
	"http": "HTTP URL", "https": "HTTPS URL", "ldap": "LDAP URL", "ldaps": "LDAP URL",
}

func schemeLabel(s string) string {
	s = strings.ToLower(s)
	for {
		if l, ok := schemes[s]; ok {
			return l
		}
		// "url:postgres" (a YAML key glued to the value): try after a colon.
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return "URL"
		}
		s = s[i+1:]
	}
}

// placeholderURL reports connection strings whose password is an obvious
// placeholder or variable reference (user:${PASS}@, user:password@).
func placeholderURL(u []byte) bool {
	s := string(u)
	i := strings.Index(s, "://")
	at := strings.LastIndexByte(s, '@')
	if i < 0 || at < i {
		return false
	}
	cred := s[i+3 : at]
	c := strings.IndexByte(cred, ':')
	if c < 0 {
		return true
	}
	return isPlaceholder(cred[c+1:])
}

var placeholderRe = regexp.MustCompile(`(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|<[^>]*>|%\(?[A-Za-z_]+\)?s?|\*+|x+|\.+|-+|changeme|change_me|password|passwd|pass|secret|example|sample|dummy|test|todo|tbd|none|null|nil|true|false|your[-_a-z]*|redacted|\[redacted\]|placeholder|os\.environ.*|process\.env.*|env\(.*\)|getenv.*)$`)

func isPlaceholder(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), `"'`+"`")
	return len(v) < 4 || placeholderRe.MatchString(v)
}

// credentialKey matches key names that hold credentials.
var credentialKey = regexp.MustCompile(`(?i)(?:^|[_.-])(?:password|passwd|pwd|pass|secret|secret[_-]?key|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth|credentials?|dsn|database[_-]?url|connection[_-]?string)(?:$|[_.-])|password|secret|token|apikey|api_key`)

// safeKeyName accepts key names made of short alphabetic words (DB_PASSWORD,
// api.token): those are echoed in reasons. Anything with digits or long
// runs (which could itself be a secret used as a key) is not.
var safeKeyName = regexp.MustCompile(`^[A-Za-z]{1,16}(?:[_.-][A-Za-z]{1,16}){0,4}$`)

// kv is one top-level key and its scalar value.
type kv struct {
	key, value string
	line       int
}

// probeStructure reads the top-level keys of JSON, YAML, TOML, INI and
// .env files and reports credentials with real-looking values.
func probeStructure(rel string, data []byte, lines lineIndex) []Finding {
	base := strings.ToLower(path.Base(rel))
	ext := path.Ext(base)
	var pairs []kv
	switch {
	case ext == ".json":
		pairs = jsonPairs(data, lines)
	case ext == ".yaml" || ext == ".yml":
		pairs = linePairs(data, ":", false)
	case ext == ".toml" || ext == ".ini" || ext == ".cfg" || ext == ".conf" || ext == ".properties":
		pairs = linePairs(data, "=", ext == ".properties")
	case strings.HasPrefix(base, ".env") || ext == ".env" || base == ".envrc":
		pairs = linePairs(data, "=", false)
	default:
		return nil
	}
	var out []Finding
	for _, p := range pairs {
		v := strings.Trim(strings.TrimSpace(p.value), `"'`)
		if hasURLCredentials(v) {
			// Already reported by the secret scan, with its line.
			continue
		}
		if !credentialKey.MatchString(p.key) || isPlaceholder(v) {
			continue
		}
		name := "a credential-like key"
		if safeKeyName.MatchString(p.key) && !looksSecret(p.key) {
			name = fmt.Sprintf("credential-like key %q", p.key)
		}
		out = append(out, Finding{Line: p.line, Kind: "credential", Label: name + " has a value", Risk: true})
	}
	return out
}

// looksSecret reports a string that itself matches a secret shape, so it
// is never echoed as a key name.
func looksSecret(s string) bool {
	return len(redact.Default().Find([]byte(s))) > 0
}

// linePairs reads unindented "key<sep>value" lines. For YAML, "key: value"
// with a scalar; for TOML/INI/.env, "key = value" (an "export " prefix is
// allowed). Section headers and comments are skipped.
func linePairs(data []byte, sep string, colonToo bool) []kv {
	var out []kv
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimRight(raw, "\r")
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == ';' || line[0] == '[' || line[0] == '-' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		j := strings.Index(line, sep)
		if colonToo {
			if k := strings.IndexByte(line, ':'); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j <= 0 {
			continue
		}
		key := strings.Trim(strings.TrimSpace(line[:j]), `"'`)
		val := strings.TrimSpace(line[j+len(sep):])
		if sep == ":" && (val == "" || val == "|" || val == ">") {
			continue
		}
		if c := strings.Index(val, " #"); c >= 0 && !strings.HasPrefix(val, `"`) && !strings.HasPrefix(val, "'") {
			val = strings.TrimSpace(val[:c])
		}
		out = append(out, kv{key: key, value: val, line: i + 1})
	}
	return out
}

// jsonPairs reads the scalar values of a JSON object's keys down to two
// levels (configs nest "database": {...}). A truncated document yields the
// pairs read before the cut.
func jsonPairs(data []byte, lines lineIndex) []kv {
	type frame struct{ object, wantKey bool }
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var (
		out   []kv
		stack []frame
		key   string
	)
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		off := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				valueDone()
			}
		case string:
			n := len(stack)
			if n > 0 && stack[n-1].object && stack[n-1].wantKey {
				key = t
				stack[n-1].wantKey = false
				continue
			}
			if n > 0 && n <= 2 && stack[n-1].object {
				out = append(out, kv{key: key, value: t, line: lines.line(off + skipSpace(data[off:]))})
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

func skipSpace(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t' || b[i] == ':' || b[i] == ',') {
		i++
	}
	return i
}

var keywords = []string{"password", "passwd", "secret", "token", "api_key", "apikey", "private key", "private_key", "credential", "auth"}

// keywordSummary counts credential keywords; it reports them when there
// are at least three hits. It never raises a file to RISK on its own:
// source code that handles passwords is not itself a secret.
func keywordSummary(data []byte) string {
	low := bytes.ToLower(data)
	total := 0
	var parts []string
	for _, k := range keywords {
		n := bytes.Count(low, []byte(k))
		if n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	if total < 3 {
		return ""
	}
	return "credential keywords in the first bytes: " + strings.Join(parts, ", ")
}

// genericPatterns are the redactor's patterns that judge a value by the
// name it is assigned to rather than by its shape. Their matches are
// checked again (placeholders, how random the value looks) before they can
// raise a file to RISK.
var genericPatterns = map[string]bool{
	"secret-assignment": true, "authorization-header": true, "bearer-token": true,
}

type secretFinding struct {
	Finding
	generic bool
}

// secretFindings runs the shared pattern table over data: the output
// redactor's (safety/redact), builtin and operator patterns, one table for
// both uses. A match is reported by the pattern's label and its line,
// never by its text. Token shapes
// (AWS, GitHub, Slack, private key blocks, JWTs...) make a file HIGH_RISK;
// a password in a URL does unless it is a placeholder; a value assigned to
// a secret-looking name does when it looks like a real secret (not a
// placeholder, at least 6 bytes, with a digit or 16 bytes long), and is
// otherwise a reason only.
func secretFindings(secrets *redact.Set, data []byte) []secretFinding {
	var out []secretFinding
	for _, m := range secrets.Find(data) {
		if len(out) >= 64 {
			break
		}
		value := string(data[m.Start:m.End])
		f := secretFinding{Finding: Finding{Line: m.Line, Kind: "secret", Label: m.Label, Risk: true}}
		switch {
		case m.Name == "url-credentials":
			if isPlaceholder(value) {
				continue
			}
			f.Label = schemeLabel(schemeBefore(data, m.Start)) + " with a password"
		case genericPatterns[m.Name]:
			if isPlaceholder(value) {
				continue
			}
			f.generic = true
			f.Risk = len(value) >= 6 && (strings.ContainsAny(value, "0123456789") || len(value) >= 16)
		}
		out = append(out, f)
	}
	return out
}

// schemeBefore returns the URL scheme that ends at the "://" before the
// password found at off ("postgres", "jdbc:postgresql"), or "".
func schemeBefore(data []byte, off int) string {
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	i := bytes.LastIndex(data[lineStart:off], []byte("://"))
	if i < 0 {
		return ""
	}
	end := lineStart + i
	start := end
	for start > lineStart {
		c := data[start-1]
		if c == '+' || c == '.' || c == '-' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			start--
			continue
		}
		break
	}
	return string(data[start:end])
}

// hasURLCredentials reports whether s holds a URL with a password.
func hasURLCredentials(s string) bool {
	for _, m := range redact.Default().Find([]byte(s)) {
		if m.Name == "url-credentials" {
			return true
		}
	}
	return false
}
