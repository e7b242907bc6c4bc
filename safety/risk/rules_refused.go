package risk

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/safety/risk/gitignore"
)

// RefusedRule is one [[rule]] of a rule file that was refused alone: the
// rest of the file still applies.
type RefusedRule struct {
	// Line is the line of the rule's [[rule]] header (0 when unknown).
	Line int
	// Index is the rule's position in the file, from 1.
	Index int
	// Reason says why the rule was refused.
	Reason string
}

// String renders the refusal for logs and descriptors:
// "line 7: rule 3 refused: category \"RISKY\" is not RISK, VALUE or IGNORE".
func (r RefusedRule) String() string {
	if r.Line > 0 {
		return fmt.Sprintf("line %d: rule %d refused: %s", r.Line, r.Index, r.Reason)
	}
	return fmt.Sprintf("rule %d refused: %s", r.Index, r.Reason)
}

// rawFile is the TOML document with each rule kept as a table, so that a
// rule with an unknown key or a wrongly typed value is refused alone.
type rawFile struct {
	Pack    PackInfo         `toml:"pack"`
	Content ContentInfo      `toml:"content"`
	Rule    []map[string]any `toml:"rule"`
}

const allowedRuleKeys = "pattern, category, priority, reason, suggested_action"

// ruleFromTable converts one decoded [[rule]] table; the string is the
// reason it is refused ("" when it is accepted).
func ruleFromTable(t map[string]any) (Rule, string) {
	var r Rule
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := t[k]
		var ok bool
		switch k {
		case "pattern":
			r.Pattern, ok = v.(string)
		case "category":
			var s string
			s, ok = v.(string)
			r.Category = Category(s)
		case "reason":
			r.Reason, ok = v.(string)
		case "suggested_action":
			var s string
			s, ok = v.(string)
			r.SuggestedAction = Action(s)
		case "priority":
			var n int64
			n, ok = v.(int64)
			r.Priority = int(n)
		default:
			return r, fmt.Sprintf("unknown key %q (allowed: %s)", k, allowedRuleKeys)
		}
		if !ok {
			want := "a string"
			if k == "priority" {
				want = "an integer"
			}
			return r, fmt.Sprintf("%s is not %s", k, want)
		}
	}
	return r, checkRule(&r)
}

// checkRule validates one rule and fills its default action; the string
// is the reason it is refused ("" when it is accepted).
func checkRule(r *Rule) string {
	switch {
	case strings.TrimSpace(r.Pattern) == "":
		return "pattern is empty"
	case len(r.Pattern) > maxPatternLen:
		return "pattern is longer than 1024 bytes"
	case strings.ContainsAny(r.Pattern, "\n\x00"):
		return "pattern holds a newline or NUL byte"
	case strings.HasPrefix(r.Pattern, "#"):
		return `a pattern starting with "#" is a comment and matches nothing; write "\#" for a literal #`
	case r.Category.rank() < 0:
		return fmt.Sprintf("category %q is not RISK, VALUE or IGNORE", string(r.Category))
	case r.SuggestedAction != "" && !validAction(r.SuggestedAction):
		return fmt.Sprintf("suggested_action %q is not READ_ONLY, CAREFUL_EDIT, SAFE_TO_IGNORE or CONSULT_HISTORY", string(r.SuggestedAction))
	case r.Reason == "" && !strings.HasPrefix(r.Pattern, "!"):
		return "reason is required (it is what the agent is told)"
	case len(r.Reason) > maxReasonLen:
		return "reason is longer than 500 bytes"
	}
	if _, err := gitignore.Compile([]string{patternLine(r.Pattern)}); err != nil {
		return "pattern is not a valid gitignore line"
	}
	if r.SuggestedAction == "" {
		r.SuggestedAction = defaultAction(r.Category)
	}
	return ""
}

// ruleLines returns the line of each "[[rule]]" header, or nil when they
// cannot be told apart from the document's text (n rules expected).
func ruleLines(data []byte, n int) []int {
	var lines []int
	for i, l := range bytes.Split(data, []byte("\n")) {
		s := strings.ReplaceAll(strings.ReplaceAll(string(l), " ", ""), "\t", "")
		if strings.HasPrefix(s, "[[rule]]") {
			lines = append(lines, i+1)
		}
	}
	if len(lines) != n {
		return nil
	}
	return lines
}

// notes renders the refused rules of a set, for logs and descriptors.
func (rs *RuleSet) notes() []string {
	out := make([]string, len(rs.Refused))
	for i, r := range rs.Refused {
		out[i] = "rule file " + rs.Source + ": " + r.String()
	}
	return out
}

// projectNotes adds to the descriptor of the project rule file what was
// refused in it (rules, or the whole file).
func (st *rootState) projectNotes(rel string, md *Metadata) {
	if rel == ProjectFile {
		md.Reasons = append(md.Reasons, st.projNotes...)
	}
}
