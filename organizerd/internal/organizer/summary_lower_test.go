package organizer

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// TestContextSummaryLowersAsTheDescriptorDoes: with a radar that reads
// content, organizerd's get_context_summary gives each file HIGH_RISK by
// name the verdict of its file-context descriptor: a .env.local of
// placeholders counts as NORMAL and is not listed, a .env with one
// real-looking secret stays HIGH_RISK.
func TestContextSummaryLowersAsTheDescriptorDoes(t *testing.T) {
	eng, err := risk.NewEngine(risk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, config.Organizer{}, func(o *Options) { o.Radar = &organize.Radar{Engine: eng, Root: o.Radar.Root} })
	e.put("cfg/.env.local", "API_KEY=changeme\nDB_PASSWORD=<password>\n")
	e.put("cfg/.env", "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n")
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
	if !strings.Contains(r.Reason, "1 file high risk by name counted as NORMAL: "+risk.PlaceholderReason) {
		t.Fatalf("the summary's text does not say a file was lowered:\n%s", r.Reason)
	}
}

// importance is the importance of rel's file-context descriptor.
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
