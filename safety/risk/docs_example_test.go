package risk

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// TestRadarDocDescriptorExampleIsReal builds the file docs/radar.md shows a
// descriptor of and checks that the engine describes it the way the
// example says: same importance, category, action, reasons and matched
// rules. An example that cites a rule no pack has fails here.
func TestRadarDocDescriptorExampleIsReal(t *testing.T) {
	doc, err := os.ReadFile("../../docs/radar.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Descriptor\n.*?```json\n(.*?)\n```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/radar.md has no descriptor example under '## Descriptor'")
	}
	var want Descriptor
	if err := json.Unmarshal(m[1], &want); err != nil {
		t.Fatalf("the example is not a descriptor: %v", err)
	}
	dir := t.TempDir()
	rel := strings.TrimPrefix(want.URI, "file-context://")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "app:\n  name: shop\n  database: postgres://shop:s3cr3tpassw0rd@db.internal:5432/shop\n"
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := jail.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	e, err := NewEngine(Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Classify(root, rel)
	if err != nil {
		t.Fatal(err)
	}
	got.Metadata.LastModified = want.Metadata.LastModified
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if !bytes.Equal(g, w) {
		t.Errorf("docs/radar.md's descriptor example differs from what the engine says for %s:\n--- doc\n%s\n--- engine\n%s", rel, w, g)
	}
}
