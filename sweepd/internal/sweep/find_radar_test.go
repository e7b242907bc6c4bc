package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestScanFindShowsDotEnvInsideNodeModules: a .env planted inside a
// node_modules is in that find's radar as HIGH_RISK, with its reason and
// suggested action, before anything is deleted; the scan's reason says a
// find holds HIGH_RISK files; a find of dependencies only has an empty
// radar.
func TestScanFindShowsDotEnvInsideNodeModules(t *testing.T) {
	e := newEnv(t)
	risky := nodeProject(t, filepath.Join(e.root, "app"))
	testfs.Write(t, filepath.Join(risky, "left-pad", ".env"), "STRIPE_SECRET=sk_live_51HfQ2eKc8Tz7YqWv3N0pLmR4xA9bC\n")
	clean := nodeProject(t, filepath.Join(e.root, "lib"))
	r := e.call("scan", nil)
	wantCode(t, r, "OK")
	if !strings.Contains(r.Reason, "1 of the finds shown hold HIGH_RISK files") {
		t.Fatalf("the scan's reason does not say a find holds HIGH_RISK files: %s", r.Reason)
	}
	s := scanOf(t, r)
	t.Run("the planted .env", func(t *testing.T) {
		fr := findAt(t, s, risky).Radar
		if fr == nil || fr.HighRisk != 1 || fr.NotIgnorable != 1 || len(fr.Items) != 1 {
			t.Fatalf("radar of %s: %+v, want one HIGH_RISK item", risky, fr)
		}
		it := fr.Items[0]
		if it.Path != filepath.Join(risky, "left-pad", ".env") || it.Importance != risk.HighRisk ||
			it.SuggestedAction == "" || it.Reason == "" {
			t.Fatalf("item %+v: want the .env, HIGH_RISK, with an action and a reason", it)
		}
	})
	t.Run("dependencies only", func(t *testing.T) {
		fr := findAt(t, s, clean).Radar
		if fr == nil || fr.NotIgnorable != 0 || fr.HighRisk != 0 || len(fr.Items) != 0 {
			t.Fatalf("radar of %s: %+v, want nothing that is not ignorable", clean, fr)
		}
	})
}

// TestScanFindRadarIsBounded: 25 private keys inside one find are all
// counted, FindRadarMaxItems are listed and the rest counted as omitted.
func TestScanFindRadarIsBounded(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "app"))
	for i := range 25 {
		testfs.Write(t, filepath.Join(nm, fmt.Sprintf("p%02d", i), "id_rsa"), "not a key\n")
	}
	fr := findAt(t, e.scanOK(nil), nm).Radar
	if fr == nil || fr.HighRisk != 25 || len(fr.Items) != FindRadarMaxItems || fr.Omitted != 25-FindRadarMaxItems {
		t.Fatalf("radar %+v: want 25 high-risk, %d listed, %d omitted", fr, FindRadarMaxItems, 25-FindRadarMaxItems)
	}
}

// TestContextSummaryInSweepd: sweepd serves get_context_summary over its
// roots: a path inside (relative with one root, or absolute) is
// summarised, one outside is PATH_ESCAPE, the answer's lists are bounded,
// and a cancelled call stops the walk and answers OPERATION_FAILED.
func TestContextSummaryInSweepd(t *testing.T) {
	e := newEnv(t)
	for i := range 60 {
		testfs.Write(t, filepath.Join(e.root, "svc", fmt.Sprintf("k%02d", i), ".env"), "A=1\n")
	}
	for _, tc := range []struct {
		name string
		path any
		code string
	}{
		{"every root", nil, "OK"},
		{"relative inside", "svc", "OK"},
		{"absolute inside", filepath.Join(e.root, "svc"), "OK"},
		{"absolute outside", e.outside, "PATH_ESCAPE"},
		{"dot-dot out", "../", "PATH_ESCAPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			if tc.path != nil {
				args["path"] = tc.path
			}
			wantCode(t, e.call("get_context_summary", args), tc.code)
		})
	}
	t.Run("bounded", func(t *testing.T) {
		mcpkittest.WantSummaryBounded(t, e.c, "svc", 60, mcpkit.SummaryMaxListed)
	})
	t.Run("cancelled", func(t *testing.T) {
		if r := mcpkittest.CallCancelled(t, e.srv.MCP(), "get_context_summary", map[string]any{}); r.Code != "OPERATION_FAILED" {
			t.Fatalf("cancelled call answered %s: %s", r.Code, r.Reason)
		}
	})
}

// TestScanSizesAndClassifiesEachFindInOneWalk: the one walk per find gives
// the find's size exactly as jail's Dir.Usage measures it (plus the find's
// own directory) and the same radar: a symlink inside is counted, not
// followed; a mount inside is neither measured nor classified; a .env
// holding a real-looking key is listed HIGH_RISK, and a .env.local whose
// values are placeholders is counted NORMAL and not listed, as their
// descriptors say.
func TestScanSizesAndClassifiesEachFindInOneWalk(t *testing.T) {
	e := newEnv(t)
	nm := nodeProject(t, filepath.Join(e.root, "app"))
	testfs.Write(t, filepath.Join(nm, "a", "b", "c", "deep.js"), strings.Repeat("x", 9000))
	testfs.Write(t, filepath.Join(nm, "a", ".env"), "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEQ9\n")
	testfs.Write(t, filepath.Join(nm, "a", ".env.local"), "API_KEY=changeme\n")
	testfs.Write(t, filepath.Join(e.outside, "big.bin"), strings.Repeat("y", 1<<20))
	if err := os.Symlink(e.outside, filepath.Join(nm, "a", "out")); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, filepath.Join(nm, "mnt"))
	testfs.Write(t, filepath.Join(nm, "mnt", "id_rsa"), "not part of the find\n")
	f := findAt(t, e.scanOK(nil), nm)

	jr, err := jail.OpenRoot(e.root)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	d, err := jr.OpenDir("app/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	u, err := d.Usage(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := u.Bytes + d.Info().DiskBytes; f.SizeBytes != want || u.Skipped != 1 {
		t.Fatalf("find size %d, want %d (Dir.Usage %+v: the mount skipped)", f.SizeBytes, want, u)
	}
	fr := f.Radar
	if fr == nil || fr.HighRisk != 1 || len(fr.Items) != 1 || fr.Items[0].Path != filepath.Join(nm, "a", ".env") {
		t.Fatalf("radar %+v: want the .env alone (not the key on the mount, not the placeholder .env.local)", fr)
	}
	if it := fr.Items[0]; it.Importance != risk.HighRisk {
		t.Fatalf("item %+v: want HIGH_RISK", it)
	}
	if fr.NotIgnorable != 2 {
		t.Fatalf("radar %+v: want 2 files not ignorable (the .env and the lowered .env.local)", fr)
	}
}
