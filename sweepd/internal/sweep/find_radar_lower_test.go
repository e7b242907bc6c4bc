package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// placeholderEnv and realEnv are a .env of placeholders only, which its
// descriptor lowers to NORMAL, and one with a real-looking secret, which
// stays HIGH_RISK.
const (
	placeholderEnv = "API_KEY=changeme\nDB_PASSWORD=<password>\n"
	realEnv        = "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n"
)

// TestScanFindRadarCountsAsTheDescriptorDoes: inside a find, a .env.local
// of placeholders is counted as not ignorable but not HIGH_RISK and is not
// listed; a .env with a real-looking secret is. Past the summary's content
// checks, the files it left unread are read when kept, and one their
// descriptor lowers leaves both the list and the HighRisk count.
func TestScanFindRadarCountsAsTheDescriptorDoes(t *testing.T) {
	t.Run("placeholders and a secret", func(t *testing.T) {
		e := newEnv(t)
		nm := nodeProject(t, filepath.Join(e.root, "app"))
		testfs.Write(t, filepath.Join(nm, "left-pad", ".env.local"), placeholderEnv)
		testfs.Write(t, filepath.Join(nm, "right-pad", ".env"), realEnv)
		fr := findAt(t, e.scanOK(nil), nm).Radar
		if fr == nil || fr.HighRisk != 1 || fr.NotIgnorable != 2 || len(fr.Items) != 1 ||
			fr.Items[0].Path != filepath.Join(nm, "right-pad", ".env") {
			t.Fatalf("radar %+v: want the .env alone HIGH_RISK and listed, the .env.local counted as not ignorable", fr)
		}
	})
	t.Run("placeholders past the content checks", func(t *testing.T) {
		e := newEnv(t)
		nm := nodeProject(t, filepath.Join(e.root, "app"))
		n := risk.MaxSummaryContentChecks + 3
		for i := range n {
			testfs.Write(t, filepath.Join(nm, fmt.Sprintf("p%03d", i), ".env"), placeholderEnv)
		}
		r := e.call("scan", nil)
		wantCode(t, r, "OK")
		fr := findAt(t, scanOf(t, r), nm).Radar
		if fr == nil || fr.HighRisk != 0 || fr.NotIgnorable != n || len(fr.Items) != 0 || fr.Omitted != 0 {
			t.Fatalf("radar %+v: want %d not ignorable, none HIGH_RISK or listed", fr, n)
		}
		if strings.Contains(r.Reason, "hold HIGH_RISK files") {
			t.Fatalf("the scan's reason counts a find of placeholders as holding HIGH_RISK files: %s", r.Reason)
		}
	})
}

// TestContextSummaryInSweepdLowersAsTheDescriptorDoes: sweepd's
// get_context_summary counts and lists files HIGH_RISK by name as their
// file-context descriptors do.
func TestContextSummaryInSweepdLowersAsTheDescriptorDoes(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, filepath.Join(e.root, "cfg", ".env.local"), placeholderEnv)
	testfs.Write(t, filepath.Join(e.root, "cfg", ".env"), realEnv)
	want := map[string]risk.Importance{"cfg/.env.local": risk.Normal, "cfg/.env": risk.HighRisk}
	for rel, imp := range want {
		if got := e.importance(rel); got != imp {
			t.Fatalf("descriptor of %s: %s, want %s", rel, got, imp)
		}
	}
	r := e.call("get_context_summary", map[string]any{"path": "cfg"})
	var d struct {
		Summaries []risk.Summary `json:"summaries"`
	}
	r.DecodeDetail(t, &d)
	if len(d.Summaries) != 1 {
		t.Fatalf("summaries %+v", d.Summaries)
	}
	s := d.Summaries[0]
	var listed []string
	for _, it := range s.HighRisk {
		listed = append(listed, it.Path)
	}
	if s.Counts[risk.HighRisk] != 1 || s.Counts[risk.Normal] != 1 || s.Lowered != 1 || !slices.Equal(listed, []string{"cfg/.env"}) {
		t.Fatalf("summary counts %v, lowered %d, listed %q: want the .env alone HIGH_RISK", s.Counts, s.Lowered, listed)
	}
}

// importance is the importance of the file-context descriptor of rel
// (relative to the first root).
func (e *env) importance(rel string) risk.Importance {
	e.t.Helper()
	var req mcp.ReadResourceRequest
	req.Params.URI = "file-context://" + rel
	res, err := e.c.ReadResource(context.Background(), req)
	if err != nil || len(res.Contents) != 1 {
		e.t.Fatalf("read %s: %v", req.Params.URI, err)
	}
	var d risk.Descriptor
	if err := json.Unmarshal([]byte(res.Contents[0].(mcp.TextResourceContents).Text), &d); err != nil {
		e.t.Fatal(err)
	}
	return d.Metadata.Importance
}
