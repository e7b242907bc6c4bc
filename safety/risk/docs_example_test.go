package risk

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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

// TestRadarDocListsEveryPack checks the table under "## Built-in packs and
// their markers" in docs/radar.md against the packs embedded from
// packs/*.toml: each pack has exactly one row (named in the first column),
// no row names a pack that does not exist, and the second column says
// "always" exactly for the packs without markers. docs/radar.md is the one
// hand-written list of packs; doc.go and policies/radar/README.md point to
// it.
func TestRadarDocListsEveryPack(t *testing.T) {
	doc, err := os.ReadFile("../../docs/radar.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := radarDocPackRows(t, string(doc))
	packs := BuiltinPacks()
	if len(packs) == 0 {
		t.Fatal("no built-in packs")
	}
	var missing []string
	for _, p := range packs {
		enabled, ok := rows[p.Name]
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		delete(rows, p.Name)
		if always := enabled == "always"; always != (len(p.Markers) == 0) {
			t.Errorf("docs/radar.md: pack %q is enabled %q in the table, but has markers %q", p.Name, enabled, p.Markers)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/radar.md's pack table has no row for built-in pack(s) %s; add one per pack", strings.Join(missing, ", "))
	}
	var extra []string
	for name := range rows {
		extra = append(extra, name)
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		t.Errorf("docs/radar.md's pack table names pack(s) %s, which safety/risk/packs/ does not have", strings.Join(extra, ", "))
	}
}

// radarDocPackRows reads the pack table of docs/radar.md into pack name ->
// its "enabled when" cell.
func radarDocPackRows(t *testing.T, doc string) map[string]string {
	t.Helper()
	m := regexp.MustCompile(`(?s)## Built-in packs and their markers\n(.*?)\n## `).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/radar.md has no '## Built-in packs and their markers' section")
	}
	rows := map[string]string{}
	for _, line := range strings.Split(m[1], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "|") {
			continue
		}
		name, enabled := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		if name == "pack" || strings.HasPrefix(name, "---") {
			continue
		}
		if _, dup := rows[name]; dup {
			t.Errorf("docs/radar.md's pack table has two rows for %q", name)
		}
		rows[name] = enabled
	}
	if len(rows) == 0 {
		t.Fatal("docs/radar.md's pack table has no rows")
	}
	return rows
}
