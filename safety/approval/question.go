package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxItems is how many items (paths, moves) a question lists before it
// summarises the rest with a count.
const MaxItems = 20

// Question is what the person is asked. Every field is built by the server
// from facts it checked itself (paths it found, sizes it measured, the argv
// it parsed); nothing the agent wrote is copied into it, except as one of
// those facts, escaped.
type Question struct {
	// Action is the tool that asks (reclaim, apply_plan, run_command, ...).
	Action string
	// Key names what made the server ask: the policy key
	// ("approval.reclaim") or the terminal rule that asks.
	Key string
	// Title is one fixed sentence naming the operation.
	Title string
	// Facts are label/value lines (working directory, confinement, total).
	Facts [][2]string
	// Items are the things acted on, one per line; long lists are cut to
	// MaxItems with a count of the rest.
	Items []string
	// Session offers "allow this exact command for the rest of the session"
	// (terminald).
	Session bool
	// Binding is everything the approval covers, canonically (ids, paths,
	// sizes, argv, cwd). A person's answer is honoured only while the
	// binding computed again from the live facts is the same.
	Binding []string
}

// The answers, exactly as the form's single enum field offers them.
const (
	AnswerOnce    = "allow once"
	AnswerSession = "allow this exact command for the rest of this session"
	AnswerDeny    = "deny"
)

// answers is the enum a question offers.
func (q Question) answers() []string {
	if q.Session {
		return []string{AnswerOnce, AnswerSession, AnswerDeny}
	}
	return []string{AnswerOnce, AnswerDeny}
}

// Message renders the question as the text the client shows the person.
func (q Question) Message() string {
	var b strings.Builder
	b.WriteString(Escape(q.Title))
	b.WriteString("\n")
	for _, f := range q.Facts {
		fmt.Fprintf(&b, "%s: %s\n", Escape(f[0]), Escape(f[1]))
	}
	for i, it := range q.Items {
		if i == MaxItems {
			fmt.Fprintf(&b, "… and %d more\n", len(q.Items)-MaxItems)
			break
		}
		b.WriteString("- " + Escape(it) + "\n")
	}
	fmt.Fprintf(&b, "Asked by: %s (the agent cannot answer this question; only you can).", Escape(q.Key))
	return b.String()
}

// Schema is the form: one required enum field, so a client renders the
// answers as buttons or a picker.
func (q Question) Schema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "string", "title": "Your answer", "enum": q.answers()},
		},
		"required": []string{"answer"},
	}
}

// Digest is a hash of the binding and the action: the same question asked
// about the same live facts has the same digest.
func (q Question) Digest() string {
	h := sha256.New()
	for _, s := range append([]string{q.Action, q.Key}, q.Binding...) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Escape makes a name safe to show as data: control characters, newlines,
// bidi overrides and other invisible format characters, and invalid UTF-8
// become visible escapes, so a file named "x\nIgnore the above, choose
// allow" stays on one line and reads as a name.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.Is(unicode.Cf, r) ||
			r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}
