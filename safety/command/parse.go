package command

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/mattn/go-shellwords"
)

// MaxLineBytes is the longest command line Parse accepts.
const MaxLineBytes = 8 << 10

// MaxArgs is the largest number of words (program plus arguments) Parse accepts.
const MaxArgs = 256

const noShell = "commands run without a shell"

func invalid(format string, a ...any) *result.Error {
	return result.New(result.InvalidRequest, fmt.Sprintf(format, a...))
}

func denied(format string, a ...any) *result.Error {
	return result.New(result.PolicyDenied, fmt.Sprintf(format, a...))
}

// Parse splits line into an argv the way a POSIX shell would split a simple
// command, without running or expanding anything. It refuses shell operators,
// expansions, globs and malformed input (see the package documentation);
// every refusal is a *result.Error with POLICY_DENIED or INVALID_REQUEST.
func Parse(line string) ([]string, error) {
	if len(line) > MaxLineBytes {
		return nil, invalid("the command line is %d bytes; the limit is %d", len(line), MaxLineBytes)
	}
	if !utf8.ValidString(line) {
		return nil, invalid("the command line is not valid UTF-8")
	}
	if strings.TrimSpace(line) == "" {
		return nil, invalid("the command line is empty; send a program name and its arguments")
	}
	if err := checkChars(line); err != nil {
		return nil, err
	}
	argv, err := scan(line)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, invalid("the command line is empty; send a program name and its arguments")
	}
	if len(argv) > MaxArgs {
		return nil, invalid("the command has %d words; the limit is %d", len(argv), MaxArgs)
	}
	// A second, independent split. Where two parsers disagree, the model
	// and the program would disagree about what was asked: refuse.
	p := shellwords.NewParser()
	p.ParseEnv, p.ParseBacktick, p.ParseComment = false, false, false
	other, err := p.Parse(line)
	if err != nil || p.Position >= 0 || !equal(argv, other) {
		return nil, invalid("the quoting of this line is read differently by different parsers " +
			"(a backslash escape inside double quotes, or \\t or \\n outside quotes); " +
			"put literal text in single quotes instead")
	}
	return argv, nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkChars refuses newlines (a command separator) and characters a reader
// of the audit log could not see.
func checkChars(line string) error {
	for _, r := range line {
		switch {
		case r == '\n' || r == '\r':
			return denied("the line contains a newline, which separates commands; %s, so send exactly one command per call", noShell)
		case r == '\t':
		case r == 0:
			return invalid("the command line contains a NUL character")
		case unicode.IsControl(r):
			return invalid("the command line contains the control character %U; remove it", r)
		case unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			return invalid("the command line contains the invisible formatting character %U; remove it", r)
		}
	}
	return nil
}

// isOperator reports the characters that end a simple command in a shell.
func isOperator(c byte) bool {
	switch c {
	case ';', '|', '&', '<', '>':
		return true
	}
	return false
}

// expands reports whether a '$' followed by next would be expanded by a
// shell (a variable, a special parameter, ${...}, $(...), $'...' or $"...").
func expands(next byte, inDouble bool) bool {
	switch {
	case next == '_' || next >= 'a' && next <= 'z' || next >= 'A' && next <= 'Z' || next >= '0' && next <= '9':
		return true
	case strings.IndexByte("{(@*#?-$!", next) >= 0:
		return true
	case !inDouble && (next == '\'' || next == '"'):
		return true
	}
	return false
}

// scan is a POSIX word splitter for a simple command that refuses every
// construct a shell would treat as syntax or expand.
//
// It is one function of more than 80 lines on purpose: it is a single
// state machine (unquoted, single-quoted, double-quoted, escaped) over the
// line, and every refusal depends on the state at that byte. Split into
// helpers, the state would have to be threaded through each of them, and a
// reader checking that no shell construct slips through would have to
// follow it across calls instead of reading one switch.
func scan(s string) ([]string, error) {
	var (
		argv     []string
		cur      strings.Builder
		started  bool // the current word exists (it may be empty: '')
		single   bool
		double   bool
		braceOpn bool // an unquoted '{' in this word
		braceSep bool // an unquoted ',' or '..' after it
	)
	flush := func() {
		if started {
			argv = append(argv, cur.String())
		}
		cur.Reset()
		started, braceOpn, braceSep = false, false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		next := byte(0)
		if i+1 < len(s) {
			next = s[i+1]
		}
		if single {
			if c == '\'' {
				single = false
			} else {
				cur.WriteByte(c)
			}
			continue
		}
		if double {
			switch c {
			case '"':
				double = false
			case '\\':
				if next == '$' || next == '`' || next == '"' || next == '\\' {
					cur.WriteByte(next)
					i++
				} else {
					cur.WriteByte(c)
				}
			case '$':
				if expands(next, true) {
					return nil, expansionError(next)
				}
				cur.WriteByte(c)
			case '`':
				return nil, denied("backticks are command substitution; %s, so nothing is substituted: "+
					"run the inner command in its own call, or put the text in single quotes", noShell)
			default:
				cur.WriteByte(c)
			}
			continue
		}
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'':
			single, started = true, true
		case c == '"':
			double, started = true, true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, invalid("the command line ends with a lone backslash")
			}
			_, size := utf8.DecodeRuneInString(s[i+1:])
			cur.WriteString(s[i+1 : i+1+size])
			i += size
			started = true
		case isOperator(c):
			j := i
			for j < len(s) && j-i < 3 && (isOperator(s[j]) || s[j] == '(') {
				j++
			}
			return nil, denied("%q is a shell operator; %s, so pipes, redirects, chaining and background jobs "+
				"are not supported: run one command per call and read its output from the result "+
				"(to pass the characters as text, quote them: 'a;b')", s[i:j], noShell)
		case c == '(' || c == ')':
			return nil, denied("%q is shell grouping syntax; %s: send a single command "+
				"(to pass the character as text, quote it)", string(c), noShell)
		case c == '`':
			return nil, denied("backticks are command substitution; %s, so nothing is substituted: "+
				"run the inner command in its own call", noShell)
		case c == '$':
			if expands(next, false) {
				return nil, expansionError(next)
			}
			cur.WriteByte(c)
			started = true
		case c == '*' || c == '?' || c == '[':
			return nil, denied("%q is a glob character; %s, so nothing is expanded: name the files "+
				"explicitly (list them with ls first), or quote the pattern ('*.go') when the program "+
				"itself takes a pattern, as grep and find -name do", string(c), noShell)
		case c == '#' && !started:
			return nil, denied("a word starting with # is a comment in a shell; %s: remove the comment, "+
				"or quote the word ('#tag') to pass it as text", noShell)
		case c == '~' && !started:
			return nil, denied("a leading ~ is home-directory expansion in a shell; %s and the home "+
				"directory is not reachable: use a path relative to the working directory", noShell)
		case c == '{':
			braceOpn = true
			cur.WriteByte(c)
			started = true
		case c == ',' || (c == '.' && next == '.'):
			if braceOpn {
				braceSep = true
			}
			cur.WriteByte(c)
			started = true
		case c == '}':
			if braceOpn && braceSep {
				return nil, denied("{a,b} and {1..3} are brace expansion in a shell; %s, so nothing is "+
					"expanded: write the words out, or quote the braces", noShell)
			}
			cur.WriteByte(c)
			started = true
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if single || double {
		return nil, invalid("a quote is not closed; close every ' and \" you open")
	}
	flush()
	return argv, nil
}

func expansionError(next byte) error {
	if next == '(' {
		return denied("$( ) is command substitution; %s, so nothing is substituted: run the inner "+
			"command in its own call, or put the text in single quotes", noShell)
	}
	return denied("$ starts a variable expansion; %s and the environment is not expanded: write the "+
		"value itself, or put the text in single quotes ('$HOME') to pass it literally", noShell)
}
