package sweep

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/reclaim"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// FindRadarMaxItems caps the items of one find's radar view; the rest are
// counted in FindRadar.Omitted.
const FindRadarMaxItems = 10

// FindRadar is the risk radar's view of what is inside a find and is not
// IGNORABLE: a .env or a private key inside a node_modules shows here
// before the find is deleted.
type FindRadar struct {
	// NotIgnorable counts the files inside the find that the radar does not
	// call IGNORABLE (HIGH_RISK, HIGH_VALUE or NORMAL).
	NotIgnorable int `json:"not_ignorable"`
	// HighRisk counts the HIGH_RISK files among them.
	HighRisk int `json:"high_risk"`
	// Normal counts the NORMAL files among them: no rule marks them and
	// git does not ignore them. They are not listed; Unlisted says so.
	Normal int `json:"normal"`
	// Unlisted says which counted files Items does not list, and why;
	// "" when Items and Omitted account for every one.
	Unlisted string `json:"unlisted,omitempty"`
	// Items are the HIGH_RISK files, then the HIGH_VALUE files and areas,
	// at most FindRadarMaxItems.
	Items []FindRadarItem `json:"items"`
	// Omitted counts the items left out of Items by the cap.
	Omitted int `json:"omitted"`
	// Partial is true when the radar's classification of the find stopped
	// at its entry cap ([radar] summary_max_entries): the counts are a
	// floor. The find's size is whole all the same: past the cap its walk
	// only measures.
	Partial bool `json:"partial"`
}

// FindRadarItem is one file or area inside a find, with the radar's
// verdict on it.
type FindRadarItem struct {
	Path            string          `json:"path"`
	Importance      risk.Importance `json:"importance"`
	SuggestedAction risk.Action     `json:"suggested_action"`
	Reason          string          `json:"reason"`
	// rel is the root-relative path of a single HIGH_RISK file whose
	// content recheck has yet to read; "" otherwise.
	rel string
}

// findRadar is the client's view of s, the summary of a find at root:
// the counts, and the items with absolute paths under the cap. A single
// HIGH_RISK file keeps its root-relative path for recheck, which reads its
// content once the find is shown.
func findRadar(root *jail.Root, s *risk.Summary) *FindRadar {
	fr := &FindRadar{
		NotIgnorable: s.Counts[risk.HighRisk] + s.Counts[risk.HighValue] + s.Counts[risk.Normal],
		HighRisk:     s.Counts[risk.HighRisk],
		Normal:       s.Counts[risk.Normal],
		Items:        []FindRadarItem{},
		Omitted:      s.Omitted[risk.HighRisk] + s.Omitted[risk.HighValue],
		Partial:      s.Truncated,
	}
	for _, it := range s.HighRisk {
		fr.add(radarItem(root, it, risk.HighRisk))
	}
	for _, it := range s.HighValue {
		fr.add(radarItem(root, it, risk.HighValue))
	}
	fr.explain()
	return fr
}

// explain sets Unlisted from the Normal count.
func (fr *FindRadar) explain() {
	fr.Unlisted = ""
	if fr.Normal > 0 {
		fr.Unlisted = strconv.Itoa(fr.Normal) + " NORMAL file(s) are counted in not_ignorable but not listed: no rule marks them risky, valuable or regenerable and git does not ignore them, so deleting them is what deleting the find means; the file-context resource describes any one of them"
	}
}

// add keeps it under the cap, or counts it as omitted.
func (fr *FindRadar) add(it FindRadarItem) {
	if len(fr.Items) >= FindRadarMaxItems {
		fr.Omitted++
		return
	}
	fr.Items = append(fr.Items, it)
}

// radarItem is the client's view of a summary item: an absolute path (a
// directory keeps its trailing slash) and the verdict by name. A single
// high-risk file keeps its root-relative path for recheck.
func radarItem(root *jail.Root, it risk.SummaryItem, imp risk.Importance) FindRadarItem {
	out := FindRadarItem{Path: absItem(root, it.Path), Importance: imp, SuggestedAction: it.SuggestedAction, Reason: it.Reason}
	if imp == risk.HighRisk && it.Kind == "file" {
		out.rel = it.Path
	}
	return out
}

// recheck gives each single high-risk file of fr, a find's radar at root,
// the verdict of its content as well as its name, as the file-context
// resource does: its descriptor's importance, action and reasons. A file
// its descriptor lowers (a summary reads at most
// risk.MaxSummaryContentChecks files) leaves the list and the HighRisk
// count, and is counted as its descriptor says.
func (fr *FindRadar) recheck(eng *risk.Engine, root *jail.Root) {
	kept := fr.Items[:0]
	for _, it := range fr.Items {
		rel := it.rel
		it.rel = ""
		if rel != "" {
			if d, err := eng.Classify(root, rel); err == nil {
				md := d.Metadata
				if md.Importance != risk.HighRisk {
					fr.lowered(md.Importance)
					continue
				}
				it.Importance, it.SuggestedAction = md.Importance, md.SuggestedAction
				if len(md.Reasons) > 0 {
					it.Reason = strings.Join(md.Reasons, "; ")
				}
			}
		}
		kept = append(kept, it)
	}
	fr.Items = kept
}

// lowered moves one file from the HighRisk count to imp, the importance
// its descriptor gives it.
func (fr *FindRadar) lowered(imp risk.Importance) {
	fr.HighRisk--
	switch imp {
	case risk.Ignorable:
		fr.NotIgnorable--
	case risk.Normal:
		fr.Normal++
		fr.explain()
	}
}

// absItem is the absolute path of a root-relative summary path.
func absItem(root *jail.Root, p string) string {
	abs := filepath.Join(root.Path(), filepath.FromSlash(p))
	if strings.HasSuffix(p, "/") {
		abs += string(filepath.Separator)
	}
	return abs
}

// riskyFinds counts the finds whose radar saw a HIGH_RISK file.
func riskyFinds(finds []Find) int {
	n := 0
	for _, f := range finds {
		if f.Radar != nil && f.Radar.HighRisk > 0 {
			n++
		}
	}
	return n
}

// insideOf is what the person is told about f before it goes: its
// HIGH_RISK items (after the content recheck) and its git-tracked files,
// named relative to the find, with their counts; nil when there are none.
func insideOf(f *found) *reclaim.Inside {
	in := &reclaim.Inside{}
	base := filepath.Join(f.root.Path(), filepath.FromSlash(f.rel)) + string(filepath.Separator)
	if f.radar != nil {
		in.HighRiskCount = f.radar.HighRisk
		for _, it := range f.radar.Items {
			if it.Importance == risk.HighRisk && len(in.HighRisk) < reclaim.MaxNamed {
				in.HighRisk = append(in.HighRisk, filepath.ToSlash(strings.TrimPrefix(it.Path, base)))
			}
		}
	}
	if g := f.git; g != nil {
		in.TrackedCount, in.Unread, in.NotRead = g.Tracked, g.Unread, g.Refused
		for _, p := range g.TrackedFiles {
			if len(in.Tracked) < reclaim.MaxNamed {
				in.Tracked = append(in.Tracked, strings.TrimPrefix(p, f.rel+"/"))
			}
		}
		for _, r := range g.Repos {
			if r.Tracked > 0 || r.Unread > 0 {
				in.Repos = append(in.Repos, r.Repo)
			}
		}
	}
	if in.HighRiskCount == 0 && in.TrackedCount == 0 && in.Unread == 0 {
		return nil
	}
	return in
}

// gitKept counts the finds kept for git's sake (not by a keep file).
func gitKept(finds []Find) int {
	n := 0
	for _, f := range finds {
		if f.Keep && f.Inside != nil && strings.Contains(f.KeepReason, "allow_tracked") {
			n++
		}
	}
	return n
}
