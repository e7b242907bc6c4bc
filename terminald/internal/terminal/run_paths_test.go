package terminal

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestRunCommandCarriesRadarViewOfExistingPaths: run_command's detail.paths
// gives the radar's verdict on the arguments that name existing paths
// (relative to cwd), and each HIGH_RISK one also comes as a resource_link.
func TestRunCommandCarriesRadarViewOfExistingPaths(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, e.Jail+"/.env", "API_KEY=canary-value-123\n")
	testfs.Write(t, e.Jail+"/sub/notes.txt", "hello\n")
	for _, tc := range []struct {
		name, line, cwd string
		paths           map[string]risk.Importance // jail-relative path -> importance
		links           []string
	}{
		{"env-at-root", "cat .env", "", map[string]risk.Importance{".env": risk.HighRisk}, []string{".env"}},
		{"relative-to-cwd", "cat ../.env notes.txt missing.txt", "sub",
			map[string]risk.Importance{".env": risk.HighRisk, "sub/notes.txt": risk.Normal}, []string{".env"}},
		{"options-and-missing-are-left-out", "ls -la nowhere.txt", "", map[string]risk.Importance{}, nil},
		{"no-arguments", "ls", "", map[string]risk.Importance{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"command": tc.line}
			if tc.cwd != "" {
				args["cwd"] = tc.cwd
			}
			r := mcpkittest.Call(t, e.c, "run_command", args)
			var d RunDetail
			r.DecodeDetail(t, &d)
			if !r.OK || d.Paths == nil {
				t.Fatalf("%s", r.Text)
			}
			got := map[string]risk.Importance{}
			for _, v := range d.Paths {
				if !v.Exists || v.Descriptor == nil {
					t.Errorf("view %+v: only existing paths with a descriptor belong here", v)
					continue
				}
				got[v.Path] = v.Descriptor.Metadata.Importance
				if v.Descriptor.Metadata.SuggestedAction == "" {
					t.Errorf("%s has no suggested action", v.Path)
				}
			}
			if len(got) != len(tc.paths) {
				t.Fatalf("paths %v, want %v", got, tc.paths)
			}
			for p, imp := range tc.paths {
				if got[p] != imp {
					t.Errorf("%s: %s, want %s", p, got[p], imp)
				}
			}
			wantLinks(t, r, tc.links)
			if strings.Contains(r.Text, "canary-value-123") {
				t.Fatalf("the secret's value reached the answer: %s", r.Text)
			}
		})
	}
}

// TestExplainLinksExistingHighRiskPaths: explain_command links an
// existing HIGH_RISK argument, never one that does not exist.
func TestExplainLinksExistingHighRiskPaths(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, e.Jail+"/.env", "API_KEY=x\n")
	for _, tc := range []struct {
		name, line string
		links      []string
	}{
		{"existing", "cat .env", []string{".env"}},
		{"missing", "cat other/.env", nil},
		{"denied-still-links", "find .env -exec rm {} +", []string{".env"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantLinks(t, mcpkittest.Call(t, e.c, "explain_command", map[string]any{"command": tc.line}), tc.links)
		})
	}
}

func wantLinks(t *testing.T, r mcpkittest.Result, paths []string) {
	t.Helper()
	var got []string
	for _, l := range r.Links {
		got = append(got, l.Name)
		if !strings.HasPrefix(l.Description, "HIGH_RISK") {
			t.Errorf("link %s: description %q", l.Name, l.Description)
		}
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(paths)
	if string(a) != string(b) {
		t.Fatalf("links %s, want %s", a, b)
	}
}
