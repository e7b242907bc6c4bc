package risk

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk/gitignore"
	"github.com/pelletier/go-toml/v2"
)

// Category is what a rule says about the files it matches.
type Category string

// The categories, strongest first.
const (
	// Risk marks the heart: secrets, production config, migrations.
	Risk Category = "RISK"
	// Value marks the bones: core source, manifests, docs worth reading.
	Value Category = "VALUE"
	// Ignore marks waste: dependencies, build output, caches, logs.
	Ignore Category = "IGNORE"
)

// categories lists the categories weakest first; the index is the rank.
var categories = [...]Category{Ignore, Value, Risk}

func (c Category) rank() int {
	for i, k := range categories {
		if k == c {
			return i
		}
	}
	return -1
}

// Action is what a rule suggests the agent do with a matching file.
type Action string

// The suggested actions.
const (
	// ReadOnly: read if needed, do not modify, move or delete.
	ReadOnly Action = "READ_ONLY"
	// CarefulEdit: edits are expected but deserve care (and usually a
	// tool, not a hand edit).
	CarefulEdit Action = "CAREFUL_EDIT"
	// SafeToIgnore: no need to read it to understand the project.
	SafeToIgnore Action = "SAFE_TO_IGNORE"
	// ConsultHistory: look at its history (git log) before changing it.
	ConsultHistory Action = "CONSULT_HISTORY"
)

var actions = []Action{ReadOnly, CarefulEdit, SafeToIgnore, ConsultHistory}

// defaultAction is the action of a rule that names none.
func defaultAction(c Category) Action {
	switch c {
	case Risk:
		return ReadOnly
	case Value:
		return CarefulEdit
	default:
		return SafeToIgnore
	}
}

// Rule is one [[rule]] table of a rule file.
type Rule struct {
	// Pattern is one gitignore line: "!" re-includes, a trailing "/"
	// matches directories only, and so on.
	Pattern string `toml:"pattern"`
	// Category is RISK, VALUE or IGNORE.
	Category Category `toml:"category"`
	// Priority orders matches of the same category; higher wins.
	Priority int `toml:"priority"`
	// Reason is the sentence an agent can quote. Required except on "!"
	// rules.
	Reason string `toml:"reason"`
	// SuggestedAction defaults to READ_ONLY for RISK, CAREFUL_EDIT for
	// VALUE and SAFE_TO_IGNORE for IGNORE.
	SuggestedAction Action `toml:"suggested_action"`
}

// PackInfo is the optional [pack] table of a rule file.
type PackInfo struct {
	// Name names the pack in sources ("builtin:node").
	Name string `toml:"name"`
	// Description says what the pack covers.
	Description string `toml:"description"`
	// Markers, if any, are file names (or glob patterns over names) at a
	// root; the pack applies to a root only when one of them exists there.
	Markers []string `toml:"markers"`
}

// Limits on rule files, so a project-local file cannot make classification
// arbitrarily slow.
const (
	maxRuleFileBytes = 1 << 20
	maxRules         = 2000
	maxPatternLen    = 1024
	maxReasonLen     = 500
)

// RuleSet is one compiled rule file.
type RuleSet struct {
	// Source names the file in matched rules: "builtin:secrets",
	// "operator:team-rules.toml", "project:.bastion-risk.toml".
	Source string
	// Info is the file's [pack] table.
	Info PackInfo
	// Content is the file's [content] table (placeholder lowering).
	Content ContentInfo
	// Rules are the file's accepted rules in file order.
	Rules []Rule
	// Refused are the file's rules refused alone, in file order.
	Refused []RefusedRule

	tier  int                                 // 0 built-in, 1 operator, 2 project
	order int                                 // position among sets of the same tier
	cats  [len(categories)]*gitignore.Matcher // by category rank; nil when empty
	index [len(categories)][]int              // matcher line -> rule index
}

// ParseRules decodes and validates one rule file. A rule that is invalid
// (unknown key, wrong type, unknown category or action, empty pattern, a
// pattern holding a newline or NUL, missing reason, ...) is refused alone
// and listed in Refused; the rest of the file applies. The whole file is
// an error only when it is not valid TOML, is larger than 1 MiB, holds
// more than 2000 rules, or its structure outside [[rule]] is wrong (an
// unknown top-level key, a bad [pack] or [content] table or marker).
func ParseRules(source string, data []byte) (*RuleSet, error) {
	if len(data) > maxRuleFileBytes {
		return nil, invalid(source, "the file is larger than 1 MiB")
	}
	var f rawFile
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, invalid(source, describeTOMLError(err))
	}
	if len(f.Rule) > maxRules {
		return nil, invalid(source, fmt.Sprintf("more than %d rules", maxRules))
	}
	for _, m := range f.Pack.Markers {
		if _, err := path.Match(m, ""); err != nil || m == "" || strings.Contains(m, "/") {
			return nil, invalid(source, fmt.Sprintf("marker %q is not a file-name pattern", m))
		}
	}
	rs := &RuleSet{Source: source, Info: f.Pack, Content: f.Content}
	at := ruleLines(data, len(f.Rule))
	for i, t := range f.Rule {
		r, why := ruleFromTable(t)
		if why != "" {
			ref := RefusedRule{Index: i + 1, Reason: why}
			if at != nil {
				ref.Line = at[i]
			}
			rs.Refused = append(rs.Refused, ref)
			continue
		}
		rs.Rules = append(rs.Rules, r)
	}
	var lines [len(categories)][]string
	for i, r := range rs.Rules {
		k := r.Category.rank()
		lines[k] = append(lines[k], patternLine(r.Pattern))
		rs.index[k] = append(rs.index[k], i)
	}
	for k := range lines {
		if len(lines[k]) == 0 {
			continue
		}
		m, err := gitignore.Compile(lines[k])
		if err != nil {
			return nil, invalid(source, "a pattern is not a valid gitignore line")
		}
		rs.cats[k] = m
	}
	return rs, nil
}

// patternLine turns a rule's pattern into the gitignore line that means
// it. A carriage return is an ordinary byte of a pattern, as git accepts
// it (macOS's template matches "Icon\r" files with "Icon[\r]"), but a
// gitignore line loses one final "\r" as its line end; a pattern ending
// in "\r" gets one more so that the pattern keeps its own.
func patternLine(p string) string {
	if strings.HasSuffix(p, "\r") {
		return p + "\r"
	}
	return p
}

func validAction(a Action) bool {
	for _, x := range actions {
		if x == a {
			return true
		}
	}
	return false
}

func invalid(source, why string) error {
	return result.New(result.InvalidRequest, "rule file "+source+" is invalid: "+why)
}

// describeTOMLError turns a go-toml error into "line N: ..." words.
func describeTOMLError(err error) string {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		var parts []string
		for i := range strict.Errors {
			e := &strict.Errors[i]
			row, _ := e.Position()
			parts = append(parts, fmt.Sprintf("line %d: unknown key %q", row, strings.Join(e.Key(), ".")))
		}
		return strings.Join(parts, "; ") + " (allowed: [pack] name, description, markers; [[rule]] pattern, category, priority, reason, suggested_action)"
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return fmt.Sprintf("line %d: %s", row, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return "it is not valid TOML for a rule file (a value has the wrong type?)"
}

// match is one rule that matched a path.
type match struct {
	set  *RuleSet
	rule *Rule
	idx  int
}

// better reports whether a beats b: category, then priority, then source
// tier, then source order, then rule order.
func (a match) better(b match) bool {
	if ar, br := a.rule.Category.rank(), b.rule.Category.rank(); ar != br {
		return ar > br
	}
	if a.rule.Priority != b.rule.Priority {
		return a.rule.Priority > b.rule.Priority
	}
	if a.set.tier != b.set.tier {
		return a.set.tier > b.set.tier
	}
	if a.set.order != b.set.order {
		return a.set.order > b.set.order
	}
	return a.idx > b.idx
}
