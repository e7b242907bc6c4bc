package organizer

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pipelineOnly are the safety packages only the pipeline (safety/organize)
// may use: the journal, the plan ids, the audit log and the question to the
// person. A server file importing one of them is walking a flow itself.
var pipelineOnly = []string{
	"github.com/bastion-mcp/bastion/safety/journal",
	"github.com/bastion-mcp/bastion/safety/ids",
	"github.com/bastion-mcp/bastion/safety/audit",
	"github.com/bastion-mcp/bastion/safety/approval",
}

// TestServerNeverWalksAFlowItself reads the imports of every non-test Go
// file of this package (go/parser, so a new file is covered as soon as it
// exists) and fails if one imports a package that belongs to the pipeline:
// each flow is one call into safety/organize, and the server only decodes
// arguments and shows the Outcome.
func TestServerNeverWalksAFlowItself(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		for _, bad := range forbiddenImports(t, name) {
			t.Errorf("%s imports %s: only safety/organize's pipeline may; call organize.Organizer instead", name, bad)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d files checked: the test is not looking at the package", checked)
	}
}

// TestImportCheckCatchesAPipelinePackage proves the check above can fail:
// a file like the old approve.go, importing safety/approval, is caught.
func TestImportCheckCatchesAPipelinePackage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "approve.go")
	src := "package organizer\n\nimport (\n\t\"time\"\n\n\t\"github.com/bastion-mcp/bastion/safety/approval\"\n)\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := forbiddenImports(t, p); len(got) != 1 || got[0] != pipelineOnly[3] {
		t.Fatalf("forbiddenImports = %v, want [%s]", got, pipelineOnly[3])
	}
}

// forbiddenImports returns the pipeline-only packages file imports.
func forbiddenImports(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range pipelineOnly {
			if path == bad || strings.HasPrefix(path, bad+"/") {
				out = append(out, path)
			}
		}
	}
	return out
}
