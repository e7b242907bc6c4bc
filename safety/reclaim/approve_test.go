package reclaim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestQuestionIsBuiltFromTheLiveRecheck: the question lists only the finds
// a dry run would delete, with path, kind and size, and the total; a
// refused id is counted, not listed; peeking used no id up; and the binding
// names the id, the path, the size, the kind and the live identity.
func TestQuestionIsBuiltFromTheLiveRecheck(t *testing.T) {
	f := newFixture(t)
	a := f.find(t, "a", "node_modules")
	b := f.find(t, "b", "node_modules")
	if err := os.Remove(filepath.Join(f.dir, "b", "package.json")); err != nil {
		t.Fatal(err)
	}
	preview := f.r.run(context.Background(), []string{a, b, "f-000000000000000000000000"}, true)
	if preview.WouldReclaim != 1 || preview.OK != 1 {
		t.Fatalf("would reclaim %d bytes in %d finds, want 1 in 1", preview.WouldReclaim, preview.OK)
	}
	q, asked := askAbout(preview)
	msg := q.Message()
	if len(asked) != 1 || asked[0] != 0 || len(q.Items) != 1 || len(q.Binding) != 1 {
		t.Fatalf("asked %v items %q", asked, q.Items)
	}
	for _, want := range []string{filepath.Join(f.dir, "a", "node_modules") + " (node_modules, 1 B)", "Directories: 1", "Total size: 1 B", "changed): 2", "approval.reclaim"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the question lacks %q:\n%s", want, msg)
		}
	}
	for _, want := range []string{"id=" + a + " ", "size=1 kind=node_modules dev=", " ino=", " mtime="} {
		if !strings.Contains(q.Binding[0], want) {
			t.Fatalf("the binding lacks %q: %s", want, q.Binding[0])
		}
	}
	if strings.Contains(msg, filepath.Join(f.dir, "b")) {
		t.Fatalf("a refused find is listed:\n%s", msg)
	}
	// Nothing was used up: the same id deletes now.
	res, err := f.r.Run(context.Background(), Request{IDs: []string{a}, Confirm: ptr(Confirmation)})
	if err != nil || res.Outcomes[0].Code != result.OK || f.exists("a/node_modules") {
		t.Fatalf("%+v %v", res, err)
	}
}
