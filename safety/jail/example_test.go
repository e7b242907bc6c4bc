package jail_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/safety/jail"
)

// The core of the jail in order: open the operator's root once, clean a
// request's path against it, record what was found, then Verify it again and
// RemoveTree it through the verified directory.
func Example() {
	tmp, err := os.MkdirTemp("", "jail-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"project/Makefile", "project/build/a.o", "project/build/obj/b.o"} {
		p := filepath.Join(tmp, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte("x"), 0o644)
	}

	root, err := jail.OpenRoot(tmp)
	if err != nil {
		panic(err)
	}
	defer root.Close()

	// A path from a request is cleaned first; leaving the root is refused.
	if _, err := root.Clean("project/../../etc"); errors.Is(err, jail.ErrEscape) {
		fmt.Println("refused:", err)
	}
	rel, _ := root.Clean("project/build")

	// What a scan records: the directory's identity, and the marker that
	// makes it a regenerable build output.
	info, _ := root.Lstat(rel)
	guard := jail.Guard{Want: info.ID, Markers: []string{"Makefile"}}

	// Verify checks every condition again and returns the open directories.
	parent, target, err := root.Verify(rel, guard)
	if err != nil {
		panic(err)
	}
	fmt.Println("verified:", target.Rel(), "in", parent.Rel())
	target.Close()
	parent.Close()

	// RemoveTree verifies once more and deletes through the verified fds.
	u, err := root.RemoveTree(rel, guard)
	if err != nil {
		panic(err)
	}
	fmt.Printf("removed %d files and %d directories\n", u.Files, u.Dirs)

	// The directory is gone now, so the same guard is STALE.
	_, err = root.RemoveTree(rel, guard)
	fmt.Println("again:", errors.Is(err, jail.ErrStaleGone), err)
	// Output:
	// refused: PATH_ESCAPE: the path leaves the root
	// verified: project/build in project
	// removed 2 files and 2 directories
	// again: true STALE: the directory no longer exists at this path
}
