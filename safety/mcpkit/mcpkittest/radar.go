package mcpkittest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/risk"
)

// BrokenRadarRules writes a [radar] rule file that does not parse into a
// fresh directory and returns a policy fragment listing it in
// [radar] rule_files, and the file's path. Append the fragment to a policy
// file's other tables.
func BrokenRadarRules(t testing.TB) (fragment, ruleFile string) {
	t.Helper()
	ruleFile = filepath.Join(t.TempDir(), "broken-rules.toml")
	if err := os.WriteFile(ruleFile, []byte("[[rule]\nthis is not TOML\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("\n[radar]\nrule_files = [%q]\n", ruleFile), ruleFile
}

// WantRadarRefusal requires the refusal every server gives at start for a
// broken [radar] rule file: one line "fatal: [radar] …" naming the file
// (WantFatal's shape).
func WantRadarRefusal(t testing.TB, r Ran, ruleFile string) {
	t.Helper()
	WantFatal(t, r, filepath.Base(ruleFile))
	if !strings.HasPrefix(r.Stderr, "fatal: [radar] ") {
		t.Fatalf("the refusal does not start \"fatal: [radar] \": %q", r.Stderr)
	}
}

// PlaceholderEnv is a .env of placeholders only, which its descriptor
// lowers to NORMAL; RealEnv holds one real-looking secret and stays
// HIGH_RISK.
const (
	PlaceholderEnv = "API_KEY=changeme\nDB_PASSWORD=<password>\n"
	RealEnv        = "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n"
)

// Descriptor reads the file-context descriptor of rel over c.
func Descriptor(t testing.TB, c *client.Client, rel string) risk.Descriptor {
	t.Helper()
	var req mcp.ReadResourceRequest
	req.Params.URI = "file-context://" + rel
	res, err := c.ReadResource(context.Background(), req)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read %s: %v", req.Params.URI, err)
	}
	text, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("read %s: %T, want text", req.Params.URI, res.Contents[0])
	}
	var d risk.Descriptor
	if err := json.Unmarshal([]byte(text.Text), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// WantSummaryLowersAsDescriptors checks that a server's get_context_summary
// gives files HIGH_RISK by name the verdicts of their descriptors. write
// puts a file at a path relative to the server's (first) root; it writes
// cfg/.env.local (PlaceholderEnv) and cfg/.env (RealEnv). Their
// descriptors, read over c, must say NORMAL and HIGH_RISK, and
// get_context_summary(path "cfg") must count the .env.local as NORMAL and
// lowered, and count and list the .env alone as HIGH_RISK, and say so in
// its text.
func WantSummaryLowersAsDescriptors(t testing.TB, c *client.Client, write func(rel, content string)) {
	t.Helper()
	write("cfg/.env.local", PlaceholderEnv)
	write("cfg/.env", RealEnv)
	for rel, imp := range map[string]risk.Importance{"cfg/.env.local": risk.Normal, "cfg/.env": risk.HighRisk} {
		if got := Descriptor(t, c, rel).Metadata.Importance; got != imp {
			t.Fatalf("descriptor of %s: %s, want %s", rel, got, imp)
		}
	}
	s, r := oneSummary(t, c, "cfg")
	var listed []string
	for _, it := range s.HighRisk {
		listed = append(listed, it.Path)
	}
	if s.Counts[risk.HighRisk] != 1 || s.Counts[risk.Normal] != 1 || s.Lowered != 1 || !slices.Equal(listed, []string{"cfg/.env"}) {
		t.Fatalf("summary counts %v, lowered %d, listed %q: want the .env alone HIGH_RISK", s.Counts, s.Lowered, listed)
	}
	if !strings.Contains(r.Reason, "1 file high risk by name counted as NORMAL: "+risk.PlaceholderReason) {
		t.Fatalf("the summary's text does not say a file was lowered:\n%s", r.Reason)
	}
}

// WantSummaryBounded requires get_context_summary(path) over c to count
// highRisk HIGH_RISK files, list listed of them (the server's cap) and
// count the rest as omitted.
func WantSummaryBounded(t testing.TB, c *client.Client, path string, highRisk, listed int) {
	t.Helper()
	s, _ := oneSummary(t, c, path)
	if s.Counts[risk.HighRisk] != highRisk || len(s.HighRisk) != listed || s.Omitted[risk.HighRisk] != highRisk-listed {
		t.Fatalf("summary %+v: want %d counted, %d listed, the rest omitted", s, highRisk, listed)
	}
}

// oneSummary calls get_context_summary(path) over c and returns its one
// summary and the call's result.
func oneSummary(t testing.TB, c *client.Client, path string) (risk.Summary, Result) {
	t.Helper()
	r := Call(t, c, "get_context_summary", map[string]any{"path": path})
	var d struct {
		Summaries []risk.Summary `json:"summaries"`
	}
	r.DecodeDetail(t, &d)
	if len(d.Summaries) != 1 {
		t.Fatalf("get_context_summary(%q): summaries %+v, want one", path, d.Summaries)
	}
	return d.Summaries[0], r
}
