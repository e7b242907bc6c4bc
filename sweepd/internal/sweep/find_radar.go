package sweep

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/safety/jail"
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
	// Items are the HIGH_RISK files, then the HIGH_VALUE files and areas,
	// at most FindRadarMaxItems.
	Items []FindRadarItem `json:"items"`
	// Omitted counts the items left out of Items by the cap.
	Omitted int `json:"omitted"`
	// Partial is true when the radar's walk of the find stopped at its
	// entry cap ([radar] summary_max_entries): the counts are a floor.
	Partial bool `json:"partial"`
}

// FindRadarItem is one file or area inside a find, with the radar's
// verdict on it.
type FindRadarItem struct {
	Path            string          `json:"path"`
	Importance      risk.Importance `json:"importance"`
	SuggestedAction risk.Action     `json:"suggested_action"`
	Reason          string          `json:"reason"`
}

// findRadar walks the find at rel under root with the radar's summary
// (rules on names; files HIGH_RISK by name that hold only placeholders
// are lowered, as their descriptors are), then reads the content of the
// few files that are HIGH_RISK by name and kept in the list, as the
// file-context resource does; one its descriptor lowers leaves the list
// and the HighRisk count. It returns nil when the walk did not finish
// (cancelled, refused, gone).
func findRadar(ctx context.Context, eng *risk.Engine, root *jail.Root, rel string) *FindRadar {
	if eng == nil {
		return nil
	}
	s, err := eng.Summarize(ctx, root, rel, risk.SummaryLimits{MaxListed: FindRadarMaxItems})
	if err != nil {
		return nil
	}
	fr := &FindRadar{
		NotIgnorable: s.Counts[risk.HighRisk] + s.Counts[risk.HighValue] + s.Counts[risk.Normal],
		HighRisk:     s.Counts[risk.HighRisk],
		Items:        []FindRadarItem{},
		Omitted:      s.Omitted[risk.HighRisk] + s.Omitted[risk.HighValue],
		Partial:      s.Truncated,
	}
	for _, it := range s.HighRisk {
		ri := radarItem(eng, root, it, risk.HighRisk)
		if ri.Importance != risk.HighRisk {
			// Its descriptor lowered it (a summary reads at most
			// risk.MaxSummaryContentChecks files): count it as that
			// says and list it no more.
			fr.lowered(ri.Importance)
			continue
		}
		fr.add(ri)
	}
	for _, it := range s.HighValue {
		fr.add(radarItem(eng, root, it, risk.HighValue))
	}
	return fr
}

// add keeps it under the cap, or counts it as omitted.
func (fr *FindRadar) add(it FindRadarItem) {
	if len(fr.Items) >= FindRadarMaxItems {
		fr.Omitted++
		return
	}
	fr.Items = append(fr.Items, it)
}

// lowered moves one file from the HighRisk count to imp, the importance
// its descriptor gives it.
func (fr *FindRadar) lowered(imp risk.Importance) {
	fr.HighRisk--
	if imp == risk.Ignorable {
		fr.NotIgnorable--
	}
}

// radarItem is the client's view of a summary item: an absolute path (a
// directory keeps its trailing slash) and, for a single high-risk file,
// the verdict of its content as well as its name.
func radarItem(eng *risk.Engine, root *jail.Root, it risk.SummaryItem, imp risk.Importance) FindRadarItem {
	out := FindRadarItem{Path: absItem(root, it.Path), Importance: imp, SuggestedAction: it.SuggestedAction, Reason: it.Reason}
	if imp != risk.HighRisk || it.Kind != "file" {
		return out
	}
	d, err := eng.Classify(root, it.Path)
	if err != nil {
		return out
	}
	md := d.Metadata
	out.Importance, out.SuggestedAction = md.Importance, md.SuggestedAction
	if len(md.Reasons) > 0 {
		out.Reason = strings.Join(md.Reasons, "; ")
	}
	return out
}

// absItem is the absolute path of a root-relative summary path.
func absItem(root *jail.Root, p string) string {
	abs := filepath.Join(root.Path(), filepath.FromSlash(p))
	if strings.HasSuffix(p, "/") {
		abs += string(filepath.Separator)
	}
	return abs
}

// radarAll gives every shown find its radar view, walking finds in
// parallel as sizeAll does; a cancelled ctx stops every walk.
func radarAll(ctx context.Context, eng *risk.Engine, finds []*found) {
	workers := min(runtime.GOMAXPROCS(0)*2, 8)
	ch := make(chan *found)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range ch {
				f.radar = findRadar(ctx, eng, f.root, f.rel)
			}
		}()
	}
	for _, f := range finds {
		if ctx.Err() != nil {
			break
		}
		ch <- f
	}
	close(ch)
	wg.Wait()
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
