package reclaim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// MaxNamed is how many HIGH_RISK and how many tracked files the question
// and the dry run name per find; the rest are counted.
const MaxNamed = 5

// Inside is what the scan's risk radar saw inside a find that a person
// should know before it goes: the HIGH_RISK files (a .env, a private key)
// and the files git tracks (a committed node_modules), each named up to
// MaxNamed, relative to the find, with the whole count.
type Inside struct {
	HighRisk      []string `json:"high_risk,omitempty"`
	HighRiskCount int      `json:"high_risk_count"`
	Tracked       []string `json:"tracked,omitempty"`
	TrackedCount  int      `json:"tracked_count"`
	// Repos are the repositories (tops relative to the root, "." for the
	// root) whose files lie inside the find.
	Repos []string `json:"repos,omitempty"`
	// Unread counts the files inside repositories whose git files were not
	// read (a gitdir outside the roots, a refused index): they may be
	// tracked. NotRead says why.
	Unread  int    `json:"unread,omitempty"`
	NotRead string `json:"not_read,omitempty"`
}

// empty reports whether there is nothing to tell.
func (in *Inside) empty() bool {
	return in == nil || in.HighRiskCount == 0 && in.TrackedCount == 0 && in.Unread == 0
}

// GitKeep decides whether a find is kept for git's sake: it holds files
// git tracks (by the scan's walk, or by the index at the moment of asking,
// live), or files of a repository whose git files were not read. What git
// tracks is not regenerable junk: a package manager's install would not
// give back a committed tree, nor the edits made to it. allowTracked
// ([sweep] allow_tracked) lets the operator reclaim such finds anyway;
// reason says what the find holds either way ("" when nothing).
func (in *Inside) GitKeep(live risk.GitHold, allowTracked bool) (keep bool, reason string) {
	if in == nil {
		in = &Inside{}
	}
	n := max(in.TrackedCount, live.Tracked)
	repos := in.Repos
	if live.Repo != "" && !contains(repos, live.Repo) {
		repos = append(append([]string(nil), repos...), live.Repo)
	}
	switch {
	case n > 0:
		reason = fmt.Sprintf("holds %d file(s) tracked by git (repository %s): what git tracks is not regenerable, and uncommitted edits to it would be lost", n, strings.Join(quoteAll(repos), ", "))
	case in.Unread > 0 || live.NotRead != "":
		why := in.NotRead
		if why == "" {
			why = live.NotRead
		}
		reason = "lies in a repository whose git files were not read (" + why + "): it may hold tracked files"
	default:
		return false, ""
	}
	if allowTracked {
		return false, reason + "; [sweep] allow_tracked = true lets it be reclaimed"
	}
	return true, reason + "; not reclaimable unless the operator sets [sweep] allow_tracked = true"
}

// errTracked is a reclaim of a find git tracks files in.
func errTracked(reason string) error {
	return result.New(result.PolicyDenied, "kept: the find "+reason)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// describe is the find's line of the question: what inside it the person
// loses besides regenerable files, named up to MaxNamed.
func (in *Inside) describe() string {
	if in.empty() {
		return ""
	}
	var parts []string
	if in.HighRiskCount > 0 {
		parts = append(parts, fmt.Sprintf("HIGH_RISK inside (risk radar): %s", named(in.HighRisk, in.HighRiskCount)))
	}
	if in.TrackedCount > 0 {
		parts = append(parts, fmt.Sprintf("tracked by git in %s: %s", strings.Join(quoteAll(in.Repos), ", "), named(in.Tracked, in.TrackedCount)))
	}
	if in.Unread > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) in a repository whose git files were not read, maybe tracked", in.Unread))
	}
	return "; " + strings.Join(parts, "; ")
}

// named lists names (quoted) and counts the rest of total.
func named(names []string, total int) string {
	s := strings.Join(quoteAll(names), ", ")
	if rest := total - len(names); rest > 0 {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("(and %d more)", rest)
	}
	return fmt.Sprintf("%d file(s): %s", total, s)
}
