package audit_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/result"
)

// An audited destructive act: the intent first (and no act without it),
// the outcome after.
func Example() {
	dir, _ := os.MkdirTemp("", "audit-example-")
	defer os.RemoveAll(dir)

	log, err := audit.Open(audit.Options{
		Path:   filepath.Join(dir, "state", "audit.jsonl"),
		Server: "sweepd",
		Roots:  []string{filepath.Join(dir, "projects")},
	})
	if err != nil {
		fmt.Println("fatal:", err)
		return
	}
	defer log.Close()

	id, err := log.Intent("reclaim", map[string]any{"path": "projects/app/node_modules"})
	if err != nil {
		fmt.Println(result.CodeOf(err)) // AUDIT_UNAVAILABLE: do not act
		return
	}
	// ... the act ...
	if err := log.Outcome(id, "reclaim", result.OK, map[string]any{"bytes": 4096}); err != nil {
		fmt.Println(result.CodeOf(err))
	}

	rep, _ := audit.VerifyFile(log.Path())
	fmt.Println(id, rep.OK, rep.Records)
	// Output: i-1 true 2
}
