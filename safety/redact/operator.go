package redact

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Extra is one operator pattern: an entry of the policy's [redaction]
// patterns. The same table feeds terminald's output redaction and the risk
// radar's content scanner.
type Extra struct {
	// Name appears in the marker, "[REDACTED:<name>]", and in a Finding,
	// so a redaction says which pattern matched. Empty means "operator".
	// A name is 1 to 64 letters, digits, '-', '_' or '.', starting with a
	// letter or digit, and may be neither a builtin pattern's name nor
	// another extra's.
	Name string
	// Regex is an RE2 regular expression that must not match the empty
	// string. With a capturing group only the first group is redacted;
	// without one, the whole match.
	Regex string
}

// unnamed is the marker name of an extra pattern without a name.
const unnamed = "operator"

// PatternError is the refusal of an operator pattern: which entry (its
// index in [redaction] patterns, and its name if it has one) and why. It
// unwraps to an INVALID_REQUEST *result.Error, which unwraps to the
// regexp package's error when the expression did not compile.
type PatternError struct {
	Index int
	Name  string
	Why   string
	err   *result.Error
}

func (e *PatternError) Error() string { return e.err.Reason }

// Unwrap returns the INVALID_REQUEST *result.Error of the refusal.
func (e *PatternError) Unwrap() error { return e.err }

func patternError(i int, x Extra, cause error, format string, a ...any) *PatternError {
	where := fmt.Sprintf("[redaction] patterns[%d]", i)
	if x.Name != "" {
		where += fmt.Sprintf(" (%q)", x.Name)
	}
	why := fmt.Sprintf(format, a...)
	return &PatternError{Index: i, Name: x.Name, Why: why,
		err: result.Wrap(result.InvalidRequest, where+" "+why, cause)}
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Check reports the first operator pattern that Compile would refuse, as a
// *PatternError, or nil. Servers call it (through config.Load) before they
// start, so a bad pattern stops every one of them with the same words.
func Check(extra []Extra) error {
	_, err := compileExtras(extra)
	return err
}

// compileExtras turns the operator's patterns into Patterns.
func compileExtras(extra []Extra) ([]Pattern, error) {
	names := map[string]bool{}
	for _, p := range Builtin() {
		names[p.Name] = true
	}
	names[EntropyPattern.Name], names[unnamed] = true, true
	var out []Pattern
	for i, x := range extra {
		p, err := compileExtra(i, x, names)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// compileExtra compiles one operator pattern; taken holds the names in
// use, to which it adds its own.
func compileExtra(i int, x Extra, taken map[string]bool) (Pattern, error) {
	switch {
	case x.Name != "" && !nameRe.MatchString(x.Name):
		return Pattern{}, patternError(i, x, nil, "has a name that is not 1 to 64 letters, digits, '-', '_' or '.' "+
			"starting with a letter or digit")
	case x.Name != "" && taken[x.Name]:
		return Pattern{}, patternError(i, x, nil, "has a name already taken by a builtin or an earlier pattern, "+
			"so the marker would not say which pattern matched; choose another")
	case x.Regex == "":
		return Pattern{}, patternError(i, x, nil, "is empty")
	}
	re, err := regexp.Compile(x.Regex)
	if err != nil {
		why := "invalid syntax"
		if se, ok := err.(*syntax.Error); ok {
			why = se.Code.String()
		}
		return Pattern{}, patternError(i, x, err, "is not a valid RE2 regular expression: %s", why)
	}
	if re.MatchString("") {
		return Pattern{}, patternError(i, x, nil, "matches the empty string, so it would redact nothing or everything")
	}
	p := Pattern{Name: unnamed, Label: fmt.Sprintf("operator pattern %d", i), Re: re}
	if x.Name != "" {
		taken[x.Name] = true
		p.Name, p.Label = x.Name, "operator pattern "+x.Name
	}
	if re.NumSubexp() > 0 {
		p.Group = 1
	}
	return p, nil
}
