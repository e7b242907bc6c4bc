package terminal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// TestContextSummaryInTerminaldLowersAsTheDescriptorDoes: with a radar
// that reads content, terminald's get_context_summary gives each file
// HIGH_RISK by name the verdict of its file-context descriptor: a
// .env.local of placeholders counts as NORMAL and is not listed, a .env
// with one real-looking secret stays HIGH_RISK.
func TestContextSummaryInTerminaldLowersAsTheDescriptorDoes(t *testing.T) {
	eng, err := risk.NewEngine(risk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *Options) { o.Radar = eng })
	files := map[string]string{
		"cfg/.env.local": "API_KEY=changeme\nDB_PASSWORD=<password>\n",
		"cfg/.env":       "API_KEY=changeme\nDB_PASSWORD=Zq8vT2mLx91Rk4Pw\n",
	}
	for rel, content := range files {
		p := filepath.Join(e.Jail, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]risk.Importance{"cfg/.env.local": risk.Normal, "cfg/.env": risk.HighRisk}
	for rel, imp := range want {
		if got := e.importance(t, rel); got != imp {
			t.Fatalf("descriptor of %s: %s, want %s", rel, got, imp)
		}
	}
	var d struct {
		Summaries []risk.Summary `json:"summaries"`
	}
	mcpkittest.Call(t, e.c, "get_context_summary", map[string]any{"path": "cfg"}).DecodeDetail(t, &d)
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
// (relative to the jail).
func (e *env) importance(t *testing.T, rel string) risk.Importance {
	t.Helper()
	var req mcp.ReadResourceRequest
	req.Params.URI = "file-context://" + rel
	res, err := e.c.ReadResource(context.Background(), req)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read %s: %v", req.Params.URI, err)
	}
	var d risk.Descriptor
	if err := json.Unmarshal([]byte(res.Contents[0].(mcp.TextResourceContents).Text), &d); err != nil {
		t.Fatal(err)
	}
	return d.Metadata.Importance
}
