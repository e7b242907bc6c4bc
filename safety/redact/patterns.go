package redact

import (
	"bytes"
	"math"
	"regexp"
	"sync"
)

// Pattern is one kind of secret. The same table serves the output redactor
// in this package and any content scanner that imports it.
type Pattern struct {
	// Name is short and stable; it appears in the marker "[REDACTED:<name>]".
	Name string
	// Label is the human words for what was found ("AWS access key id").
	Label string
	// Re finds candidates. Token bodies are written unbounded ({n,}) to keep
	// the compiled program small; the redactor bounds each builtin match by
	// a length limit (see the package doc), never more than MaxSpan.
	Re *regexp.Regexp
	// Group selects the part of a match that is the secret. 0 means the
	// whole match. A value n > 0 means the first capturing group numbered n
	// or higher that took part in the match, so an expression with several
	// alternatives (a quoted and an unquoted value, say) can name the first
	// of them. Text around the secret (a key name, a scheme, a user name)
	// is kept.
	Group int
	// Keywords are lower-case literals; every match begins with one of them
	// (compared without regard to ASCII case). The redactor runs Re only
	// where a keyword starts, anchored there, which keeps it fast. A pattern
	// without keywords (an operator pattern) is searched over all the text.
	Keywords []string
	// Verify, if set, must return true for the secret part of a match (the
	// bytes Group selects) or the match is ignored. It lets a pattern refuse
	// look-alikes that a regular expression cannot (placeholders, words).
	Verify func(secret []byte) bool

	maxLen int  // longest match looked for at a keyword; 0 means 1024
	kind   kind // how the redactor finds matches
}

type kind uint8

const (
	kindRegexp   kind = iota // Re at each keyword, or over all text without keywords
	kindPEMBlock             // BEGIN line, then the first END line or the body lines
	kindPEMTail              // Re finds an END line; the body is walked backwards
	kindEntropy              // runs of token characters, judged by Verify
)

// span returns the secret part of the match m (absolute within the searched
// slice) or (-1, -1).
func (p *Pattern) span(m []int) (int, int) {
	if p.Group <= 0 {
		return m[0], m[1]
	}
	for g := p.Group; 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 {
			return m[2*g], m[2*g+1]
		}
	}
	return -1, -1
}

// Builtin returns the shipped pattern set, in priority order: when two
// patterns find the same span, the earlier one names it. Treat it as
// read-only; Compile copies it. It is compiled on first use, not at
// program start: every binary that links this package (the sandbox
// helper included, which runs before main) would otherwise pay for it.
func Builtin() []Pattern { return builtin() }

var builtin = sync.OnceValue(func() []Pattern {
	return []Pattern{
		{
			// A whole PEM/PGP block. If the END line is not within MaxSpan bytes
			// (the output was cut, or the block is huge) the header plus every
			// following whole line that looks like a PEM header or base64 body
			// (or is empty) is taken. The redactor finds the same spans in code
			// (Re is costly to run over MaxSpan bytes).
			Name:  "private-key",
			Label: "private key block",
			Re: regexp.MustCompile(`-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----` +
				`(?:[\s\S]*?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----` +
				`|(?:\r?\n(?:[A-Za-z][A-Za-z\-]{0,40}:[^\r\n]{0,200}|[A-Za-z0-9+/=]{1,200})?\r?(?m:$))*)`),
			Keywords: []string{"-----begin"},
			maxLen:   MaxSpan,
			kind:     kindPEMBlock,
		},
		{
			// The body and END line of a key whose BEGIN line is not in view
			// (`tail key.pem`, or the rest of a block longer than MaxSpan). Re
			// matches the END line; the redactor then takes the whole lines
			// before it that look like base64 body or PEM headers, at least one
			// of them 16 bytes or longer.
			Name:     "private-key-tail",
			Label:    "end of a private key block",
			Re:       regexp.MustCompile(`-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----`),
			Keywords: []string{"-----end"},
			maxLen:   80,
			kind:     kindPEMTail,
		},
		{
			Name:     "aws-access-key-id",
			Label:    "AWS access key id",
			Re:       regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}\b`),
			Keywords: []string{"akia", "asia", "abia", "acca", "a3t"},
		},
		{
			Name:  "aws-secret-access-key",
			Label: "AWS secret access key",
			Re: regexp.MustCompile(`(?i)(?:aws_?)?secret_?(?:access_?)?key["']?[ \t]*(?::=|=>|=|:)[ \t]*["']?` +
				`([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
			Group:    1,
			Keywords: []string{"aws", "secret"},
		},
		{
			Name:     "github-token",
			Label:    "GitHub token",
			Re:       regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`),
			Keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		},
		{
			Name:     "github-pat",
			Label:    "GitHub fine-grained personal access token",
			Re:       regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{40,}`),
			Keywords: []string{"github_pat_"},
		},
		{
			Name:     "gitlab-token",
			Label:    "GitLab token",
			Re:       regexp.MustCompile(`\bgl(?:pat|dt|rt|ptt)-[A-Za-z0-9_\-]{20,}`),
			Keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-"},
		},
		{
			Name:     "slack-token",
			Label:    "Slack token",
			Re:       regexp.MustCompile(`\b(?:xox[abeprs]|xapp)-[A-Za-z0-9\-]{10,}`),
			Keywords: []string{"xox", "xapp-"},
			Verify:   hasDigit,
		},
		{
			Name:     "slack-webhook",
			Label:    "Slack webhook URL",
			Re:       regexp.MustCompile(`(?i)hooks\.slack\.com/((?:services|workflows|triggers)/[A-Za-z0-9_/\-]{16,})`),
			Group:    1,
			Keywords: []string{"hooks.slack.com"},
		},
		{
			Name:     "stripe-key",
			Label:    "Stripe secret or restricted key",
			Re:       regexp.MustCompile(`\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}\b`),
			Keywords: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"},
		},
		{
			Name:     "google-api-key",
			Label:    "Google API key",
			Re:       regexp.MustCompile(`\bAIza[A-Za-z0-9_\-]{35}`),
			Keywords: []string{"aiza"},
		},
		{
			Name:     "anthropic-key",
			Label:    "Anthropic API key",
			Re:       regexp.MustCompile(`\bsk-ant-[a-z]{2,10}[0-9]{0,3}-[A-Za-z0-9_\-]{20,}`),
			Keywords: []string{"sk-ant-"},
		},
		{
			Name:     "openai-key",
			Label:    "OpenAI API key",
			Re:       regexp.MustCompile(`\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{20,}`),
			Keywords: []string{"sk-"},
			Verify:   mixedCase,
		},
		{
			Name:  "jwt",
			Label: "JSON Web Token",
			Re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}` +
				`\.[A-Za-z0-9_\-]*`),
			Keywords: []string{"eyj"},
			maxLen:   8192,
		},
		{
			// scheme://user:password@host: the scheme and user are kept.
			Name:     "url-credentials",
			Label:    "password in a URL",
			Re:       regexp.MustCompile(`://[^\s:/?#@"'<>]*:([^\s/?#@"'<>]+)@`),
			Group:    1,
			Keywords: []string{"://"},
		},
		{
			Name:  "authorization-header",
			Label: "Authorization header value",
			Re: regexp.MustCompile(`(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?` +
				`(?:(?:bearer|basic|token|bot|digest|negotiate|apikey)[ \t]+)?([^\s"',;]{6,})`),
			Group:    1,
			Keywords: []string{"authorization"},
			Verify:   notPlaceholder,
			maxLen:   4096,
		},
		{
			Name:     "bearer-token",
			Label:    "Bearer token",
			Re:       regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)`),
			Group:    1,
			Keywords: []string{"bearer"},
			Verify:   hasDigit,
			maxLen:   4096,
		},
		{
			// key = value, key: value, "key": "value", KEY=value, key := value.
			// The key word may be the end of a longer name (DB_PASSWORD,
			// client_secret, x-api-key); it must be followed directly by the
			// operator, so password_reset_url or "tokens: 5" are not matched.
			Name:  "secret-assignment",
			Label: "value assigned to a secret-looking name (password, token, secret, api key)",
			Re: regexp.MustCompile(`(?i)(?:secret|token|passw(?:or)?d|api[_\-]?key|access[_\-]?key)(?:[_\-]?key)?` +
				`["']?[ \t]*(?::=|=>|=|:)[ \t]*` +
				`(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"',;=:<>\x60][^\s"',;\x60]*))`),
			Group:    1,
			Keywords: []string{"secret", "token", "passw", "api", "access"},
			Verify:   notPlaceholder,
		},
	}
})

// Anchored BEGIN and END lines of a private key block.
var (
	pemBegin = regexp.MustCompile(`^-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`^-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
)

// EntropyPattern is the optional fallback (Options.Entropy): a whole run
// of at least 32 token characters (letters, digits, + / _ -, then up to two
// '=') whose Shannon entropy is at least 4.3 bits per byte and that mixes
// upper case, lower case and digits. Hex-only runs (commit ids, checksums)
// are never taken. Runs are measured up to MaxSpan bytes.
var EntropyPattern = Pattern{
	Name:   "high-entropy",
	Label:  "long high-entropy token",
	Re:     regexp.MustCompile(`[A-Za-z0-9+/_\-]{32,}={0,2}`),
	Verify: highEntropy,
	maxLen: MaxSpan,
	kind:   kindEntropy,
}

func hasDigit(b []byte) bool {
	for _, c := range b {
		if c >= '0' && c <= '9' {
			return true
		}
	}
	return false
}

// mixedCase reports whether b has an upper-case letter, a lower-case letter
// and a digit: real keys do, slugs and words rarely.
func mixedCase(b []byte) bool {
	var up, lo, dig bool
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			lo = true
		case c >= '0' && c <= '9':
			dig = true
		}
	}
	return up && lo && dig
}

var placeholders = [][]byte{
	[]byte("null"), []byte("nil"), []byte("none"), []byte("true"), []byte("false"),
	[]byte("undefined"), []byte("bearer"), []byte("basic"), []byte("required"),
	[]byte("string"), []byte("redacted"),
}

// notPlaceholder refuses values that are references or code rather than a
// secret: $VAR, ${VAR}, %s, {{ x }}, <token>, f(x), null, "******", and an
// already redacted marker.
func notPlaceholder(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case '$', '%', '{', '<', '(', '[', '*':
		if b[0] != '*' || bytes.Count(b, []byte{'*'}) == len(b) {
			return false
		}
	}
	if bytes.IndexByte(b, '(') >= 0 {
		return false
	}
	for _, p := range placeholders {
		if bytes.EqualFold(b, p) {
			return false
		}
	}
	return true
}

func highEntropy(b []byte) bool {
	for len(b) > 0 && b[len(b)-1] == '=' {
		b = b[:len(b)-1]
	}
	if len(b) < 32 || !mixedCase(b) {
		return false
	}
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	n := float64(len(b))
	h := 0.0
	for _, k := range counts {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h >= 4.3
}
