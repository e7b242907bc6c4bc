package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// TestScanNeverListsSetAsideDirectories: a directory a reclaim set aside
// (at the root's top, or of that name anywhere) is neither listed nor
// entered, even when it still holds a whole project.
func TestScanNeverListsSetAsideDirectories(t *testing.T) {
	e := newEnv(t)
	nodeProject(t, filepath.Join(e.root, "proj"))
	nodeProject(t, filepath.Join(e.root, jail.AsidePrefix+"r-1", "proj"))
	deep := filepath.Join(e.root, "other", jail.AsidePrefix+"r-2")
	nodeProject(t, deep)
	s := e.scanOK(map[string]any{})
	if got := paths(s); len(got) != 1 || got[0] != filepath.Join(e.root, "proj", "node_modules") {
		t.Fatalf("finds %v, want only proj/node_modules", got)
	}
}

// TestReclaimNamesItsAsideInTheIntent: a confirmed reclaim's intent record
// names the set-aside directory, and nothing of that name is left.
func TestReclaimNamesItsAsideInTheIntent(t *testing.T) {
	e := newEnv(t) // no Asker: the agent's confirm deletes
	nm := nodeProject(t, filepath.Join(e.root, "proj"))
	f := findAt(t, e.scanOK(map[string]any{}), nm)
	wantCode(t, e.call("reclaim", map[string]any{"ids": []string{f.ID}, "confirm": "delete"}), "OK")
	if exists(nm) {
		t.Fatal("node_modules survived")
	}
	ents, _ := os.ReadDir(e.root)
	for _, en := range ents {
		if jail.IsAside(en.Name()) {
			t.Fatalf("%s left in the root", en.Name())
		}
	}
	b, err := os.ReadFile(e.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"aside":"`+jail.AsidePrefix+`r-`) {
		t.Fatalf("the intent record does not name the set-aside directory:\n%s", b)
	}
}
