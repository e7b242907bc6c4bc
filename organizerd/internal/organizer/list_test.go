package organizer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// listOut is list_files' detail.
type listOut struct {
	Entries []Entry `json:"entries"`
	Count   int     `json:"count"`
}

func (e *env) list(args map[string]any) (opResult, map[string]Entry) {
	e.t.Helper()
	r := e.call("list_files", args)
	if r.Code != "OK" {
		e.t.Fatalf("list_files: %s %s", r.Code, r.Reason)
	}
	var out listOut
	r.DecodeDetail(e.t, &out)
	byName := map[string]Entry{}
	for _, en := range out.Entries {
		byName[en.Name] = en
	}
	return r, byName
}

// TestListFilesCarriesTheRadarsVerdict: every file and folder list_files
// shows carries the radar's importance and suggested action, and each
// HIGH_RISK entry comes as a resource_link to its descriptor.
func TestListFilesCarriesTheRadarsVerdict(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put(".env", "DB_PASSWORD=canary-value-123\n")
	e.put("report.pdf", "%PDF-1.4\n")
	e.put("node_modules/left-pad/index.js", "module.exports = 1\n")
	e.put("keys/id_rsa", "not really a key\n")
	if err := os.Symlink("report.pdf", filepath.Join(e.ws, "link.pdf")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, subdir, entry string
		importance          risk.Importance
		linked              bool
	}{
		{"env-file", "", ".env", risk.HighRisk, true},
		{"document", "", "report.pdf", risk.Normal, false},
		{"dependencies", "", "node_modules", risk.Ignorable, false},
		{"key-in-subdir", "keys", "id_rsa", risk.HighRisk, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			if tc.subdir != "" {
				args["subdir"] = tc.subdir
			}
			r, byName := e.list(args)
			en, ok := byName[tc.entry]
			if !ok {
				t.Fatalf("no entry %s: %s", tc.entry, r.Text)
			}
			if en.Importance != string(tc.importance) || en.SuggestedAction == "" {
				t.Fatalf("%s: importance %q suggested_action %q, want %s and an action", tc.entry, en.Importance, en.SuggestedAction, tc.importance)
			}
			linked := false
			for _, l := range r.Links {
				if l.URI == risk.URIFor(en.Path) {
					linked = true
				}
			}
			if linked != tc.linked {
				t.Fatalf("%s (%s) linked=%v, want %v: %+v", tc.entry, en.Path, linked, tc.linked, r.Links)
			}
		})
	}
	_, byName := e.list(map[string]any{})
	if l := byName["link.pdf"]; l.Importance != "" || l.SuggestedAction != "" {
		t.Errorf("a symlink has no verdict by the radar here: %+v", l)
	}
}

// TestListFilesLinksAtMostTenHighRiskEntries: a folder of many secrets
// gives one resource_link each for the first ten (by name), no more.
func TestListFilesLinksAtMostTenHighRiskEntries(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	for i := 0; i < 14; i++ {
		e.put(fmt.Sprintf("secrets/.env.%02d", i), "TOKEN=canary-value-123\n")
	}
	r, byName := e.list(map[string]any{"subdir": "secrets"})
	if len(byName) != 14 || len(r.Links) != 10 {
		t.Fatalf("%d entries, %d links; want 14 and 10", len(byName), len(r.Links))
	}
	for i, l := range r.Links {
		if want := fmt.Sprintf("secrets/.env.%02d", i); l.Name != want || l.URI != risk.URIFor(want) {
			t.Errorf("link %d = %s %s, want %s", i, l.Name, l.URI, want)
		}
	}
}
