package command

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const rulesDocPath = "../../policies/terminal-rules.md"

// TestTerminalRulesDocCoversShippedSections keeps policies/terminal-rules.md
// in step with Standard and Dev. The doc "mentions" a name or token when it
// is a word of a `code span` (words are split at white space, "," and "/",
// so `clone/init --template` mentions clone, init and --template) in the
// right "## " section of the doc:
//
//   - every allowlisted command: in the profile's allowlist section;
//   - every command on the ask list: in the profile's ask section;
//   - every denylisted command: in the profile's denylist section, except
//     the groups Standard takes from the Programs table (shells, wrappers,
//     interpreters, tools), which the section must instead name by their
//     kind and by "command.Programs", the one table that lists them;
//   - every argument rule: each token of each of its deny_args and ask_args
//     entries, in
//     the section whose heading names the rule's command ("## git",
//     "## cp, mv, touch, mkdir"). A token ending in "*" is mentioned by a
//     word with its prefix (`+refspec` for "+*"); a word ending in "*"
//     mentions the tokens it prefixes (`credential*` for "credential-cache").
//
// Words, not substrings, so that "at" or "go" is not found inside another
// word. The test fails naming every command and token that is missing.
func TestTerminalRulesDocCoversShippedSections(t *testing.T) {
	b, err := os.ReadFile(rulesDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseRulesDoc(string(b))
	for _, c := range []struct {
		name         string
		section      Section
		allow, ask   string // headings of the allowlist and ask list sections
		deny         string // heading of the denylist section
		programsDeny bool   // the denylist includes the Programs table's groups
	}{
		{"standard", Standard(), "Allowlist", "Ask: a person approves", "Denylist", true},
		{"dev", Dev(), "The sandbox profile", "The sandbox profile", "The sandbox profile", false},
	} {
		t.Run(c.name+"/allowlist", func(t *testing.T) {
			var names []string
			for _, g := range c.section.Allow {
				names = append(names, g.Names...)
			}
			if missing := doc.missing(c.allow, names); len(missing) > 0 {
				t.Errorf("%s, section %q, does not name allowlisted command(s) %s", rulesDocPath, c.allow, strings.Join(missing, " "))
			}
		})
		t.Run(c.name+"/ask", func(t *testing.T) {
			if _, ok := doc.text[c.ask]; !ok {
				t.Fatalf("%s has no section %q", rulesDocPath, c.ask)
			}
			var names []string
			for _, g := range c.section.Ask {
				names = append(names, g.Names...)
			}
			if missing := doc.missing(c.ask, names); len(missing) > 0 {
				t.Errorf("%s, section %q, does not name asked-about command(s) %s", rulesDocPath, c.ask, strings.Join(missing, " "))
			}
		})
		t.Run(c.name+"/denylist", func(t *testing.T) {
			checkDenyDoc(t, doc, c.deny, c.section.Deny)
		})
		t.Run(c.name+"/rules", func(t *testing.T) {
			for _, g := range c.section.Rules {
				for _, r := range g.Rules {
					checkRuleDoc(t, doc, r)
				}
			}
		})
	}
}

// checkDenyDoc checks that the doc's section heading names every command
// of groups, or, for a group taken from the Programs table, its kind and
// the table.
func checkDenyDoc(t *testing.T, doc rulesDoc, heading string, groups []Group) {
	t.Helper()
	var names []string
	for _, g := range groups {
		kind, fromTable := programsGroup(g)
		if !fromTable {
			names = append(names, g.Names...)
			continue
		}
		text := doc.text[heading]
		if !strings.Contains(text, "command.Programs") || !strings.Contains(strings.ToLower(text), kind) {
			t.Errorf("%s, section %q, does not name the %s of command.Programs, which the denylist includes", rulesDocPath, heading, kind)
		}
	}
	if missing := doc.missing(heading, names); len(missing) > 0 {
		t.Errorf("%s, section %q, does not name denylisted command(s) %s", rulesDocPath, heading, strings.Join(missing, " "))
	}
}

// programsGroup reports whether g is a denylist group Standard takes from
// the Programs table, and the plural noun of its kind ("shells").
func programsGroup(g Group) (string, bool) {
	for k, comment := range kindGroups {
		if g.Comment == comment {
			return strings.ToLower(k.String()) + "s", true
		}
	}
	return "", false
}

// checkRuleDoc checks that the section for r's command names every token
// of every deny_args and ask_args entry of r.
func checkRuleDoc(t *testing.T, doc rulesDoc, r Rule) {
	t.Helper()
	heading := doc.sectionFor(r.Command)
	if heading == "" {
		t.Errorf("%s has no section whose heading names %q, which has argument rules", rulesDocPath, r.Command)
		return
	}
	var tokens []string
	for _, entry := range slices.Concat(r.DenyArgs, r.AskArgs) {
		tokens = append(tokens, strings.Fields(entry)...)
	}
	if missing := doc.missing(heading, tokens); len(missing) > 0 {
		t.Errorf("%s, section %q, does not name %s rule token(s) %s (rule %q, ask_args %q)", rulesDocPath, heading, r.Command,
			strings.Join(missing, " "), r.DenyArgs, r.AskArgs)
	}
}

// rulesDoc is terminal-rules.md split at its "## " headings: the text and
// the code-span words of each section.
type rulesDoc struct {
	headings []string
	text     map[string]string
	words    map[string][]string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

func parseRulesDoc(doc string) rulesDoc {
	d := rulesDoc{text: map[string]string{}, words: map[string][]string{}}
	for _, part := range strings.Split(doc, "\n## ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		d.headings = append(d.headings, heading)
		d.text[heading] = body
		for _, m := range codeSpan.FindAllStringSubmatch(body, -1) {
			d.words[heading] = append(d.words[heading], strings.FieldsFunc(m[1], func(r rune) bool {
				return r == ' ' || r == '\n' || r == ',' || r == '/'
			})...)
		}
	}
	return d
}

// sectionFor returns the heading that names command, as a whole word
// ("## cp, mv, touch, mkdir" names mv), or "".
func (d rulesDoc) sectionFor(command string) string {
	for _, h := range d.headings {
		if slices.Contains(strings.FieldsFunc(h, func(r rune) bool { return r == ' ' || r == ',' }), command) {
			return h
		}
	}
	return ""
}

// missing returns the names that no code-span word of section heading
// mentions, in order.
func (d rulesDoc) missing(heading string, names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.ContainsFunc(d.words[heading], func(w string) bool { return mentions(w, n) }) {
			out = append(out, n)
		}
	}
	return out
}

// mentions reports whether doc word w names token n: equal, or equal up
// to a trailing "*" on either side.
func mentions(w, n string) bool {
	switch {
	case w == n:
		return true
	case strings.HasSuffix(n, "*"):
		return strings.HasPrefix(w, strings.TrimSuffix(n, "*"))
	case strings.HasSuffix(w, "*"):
		return strings.HasPrefix(n, strings.TrimSuffix(w, "*"))
	}
	return false
}
