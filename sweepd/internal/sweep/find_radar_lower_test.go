package sweep

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/testfs"
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
		testfs.Write(t, filepath.Join(nm, "left-pad", ".env.local"), mcpkittest.PlaceholderEnv)
		testfs.Write(t, filepath.Join(nm, "right-pad", ".env"), mcpkittest.RealEnv)
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
			testfs.Write(t, filepath.Join(nm, fmt.Sprintf("p%03d", i), ".env"), mcpkittest.PlaceholderEnv)
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
	mcpkittest.WantSummaryLowersAsDescriptors(t, e.c, func(rel, content string) {
		testfs.Write(t, filepath.Join(e.root, filepath.FromSlash(rel)), content)
	})
}
