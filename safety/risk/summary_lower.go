package risk

import (
	"fmt"
	"strings"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// MaxSummaryContentChecks bounds the content checks of one summary. A
// check looks at one file that is HIGH_RISK by name and in a key/value
// format the placeholder scanner reads (.env, JSON, YAML, TOML, INI...):
// it stats the file and, when its size allows lowering, reads its first
// Options.ScanBytes through the jail, as Classify does. Past the bound the
// other such files keep their name verdict (HIGH_RISK) and are counted in
// Summary.ContentUnread. 200 checks cost a few milliseconds; the files
// they concern are few in real trees.
const MaxSummaryContentChecks = 200

// summaryLowering gives a summary the placeholder lowering of the
// descriptors (lower.go): a file HIGH_RISK by name whose whole content is
// understood and holds only placeholders counts as NORMAL, as its
// descriptor says.
type summaryLowering struct {
	e      *Engine
	root   *jail.Root
	on     bool // the scanner reads content and no rule file turned lowering off
	checks int
}

// newSummaryLowering prepares the lowering of a summary of root under the
// rules st: off when the operator turned the scanner off (ScanBytes < 0)
// or a rule file in force set [content] lower_placeholders = false, as in
// Classify.
func (e *Engine) newSummaryLowering(root *jail.Root, st *rootState) *summaryLowering {
	return &summaryLowering{e: e, root: root, on: e.opts.ScanBytes > 0 && st.lowering()}
}

// lowered reports whether the file rel, HIGH_RISK by name, is lowered to
// NORMAL by its content, counting it in s.Lowered, or in s.ContentUnread
// when the check bound stopped a check that could have lowered it.
func (l *summaryLowering) lowered(rel string, s *Summary) bool {
	if l == nil || !l.on || kvFormat(rel) == "" {
		return false // no content can lower it: nothing to read
	}
	if l.checks >= MaxSummaryContentChecks {
		s.ContentUnread++
		return false
	}
	l.checks++
	if !l.placeholdersOnly(rel) {
		return false
	}
	s.Lowered++
	return true
}

// placeholdersOnly reads rel as Classify does and applies Classify's
// lowering test: the scan read the whole file (its size is at most
// ScanBytes) and every value in it is a placeholder. A file that cannot be
// read (gone, replaced, refused by the jail) is not lowered.
func (l *summaryLowering) placeholdersOnly(rel string) bool {
	fi, err := l.root.Lstat(rel)
	if err != nil || !fi.IsRegular() || fi.Size == 0 || fi.Size > int64(l.e.opts.ScanBytes) {
		// Empty: no value to prove anything. Larger than the scan: the
		// scanner does not see all of it, so Classify does not lower it.
		return false
	}
	data, err := l.e.readHead(l.root, rel, fi)
	if err != nil {
		return false
	}
	return int64(len(data)) == fi.Size && placeholdersOnly(rel, data)
}

// loweringText is the summary's lines about placeholder lowering, "" when
// nothing was lowered or left unread.
func (s *Summary) loweringText() string {
	var b strings.Builder
	if s.Lowered > 0 {
		fmt.Fprintf(&b, "%s high risk by name counted as NORMAL: %s (as their descriptors say)\n",
			plural(s.Lowered, "file"), PlaceholderReason)
	}
	if s.ContentUnread > 0 {
		fmt.Fprintf(&b, "%s high risk by name not read (the summary checks the content of at most %d): they keep the name verdict, "+
			"and their file-context descriptors read their content\n", plural(s.ContentUnread, "file"), MaxSummaryContentChecks)
	}
	return b.String()
}

// plural is "1 file" or "1,234 files".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return commas(n) + " " + word + "s"
}
