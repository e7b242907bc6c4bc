//go:build linux

package jail

import (
	"errors"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// mapErr decides which jail refusal an errno is; result's errno table gives
// its code and reason. The sentinel's code must be the table's, or the table
// could not word it (FromOS would fall back to the sentinel's own reason).
func TestMapErrMakesTheSentinelAndKeepsTheErrno(t *testing.T) {
	for _, c := range []struct {
		name     string
		errno    unix.Errno
		sentinel *result.Error
	}{
		{"EXDEV is an escape", unix.EXDEV, ErrEscape},
		{"ELOOP is a symlink", unix.ELOOP, ErrSymlink},
		{"ENOENT is not found", unix.ENOENT, ErrNotFound},
		{"ENOTDIR is not a directory", unix.ENOTDIR, ErrNotDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mapErr(c.errno)
			if !errors.Is(err, c.sentinel) || !errors.Is(err, c.errno) {
				t.Fatalf("mapErr(%v) = %v: does not match both %v and the errno", c.errno, err, c.sentinel)
			}
			tableCode, tableReason := result.Classify(c.errno)
			if tableCode != c.sentinel.Code {
				t.Fatalf("the errno table says %s for %v, the jail's sentinel %s", tableCode, c.errno, c.sentinel.Code)
			}
			if code, reason := result.Classify(err); code != tableCode || reason != tableReason {
				t.Fatalf("Classify(mapErr(%v)) = %s %q, want the table's %s %q", c.errno, code, reason, tableCode, tableReason)
			}
		})
	}
	t.Run("other errnos pass through", func(t *testing.T) {
		if err := mapErr(unix.EACCES); err != unix.EACCES {
			t.Fatalf("mapErr(EACCES) = %v", err)
		}
		if mapErr(nil) != nil {
			t.Fatal("mapErr(nil) is not nil")
		}
	})
}

// errors.Is(err, ErrEscape) answers the same whichever resolver (or
// platform) refused: openat2 says EXDEV, the walk refuses "..", and both are
// made from ErrEscape. A refusal with the same words that was not made from
// ErrEscape does not match it.
func TestEscapeMatchesErrEscapeInBothResolvers(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "root")
		mkdirAll(t, filepath.Join(root, "a"))
		mkdirAll(t, filepath.Join(tmp, "outside"))
		r := openRoot(t, root)
		for _, rel := range []string{"..", "../outside", "a/../../outside"} {
			t.Run(rel, func(t *testing.T) {
				d, err := r.OpenDir(rel)
				if err == nil {
					d.Close()
					t.Fatalf("OpenDir(%q) opened outside the root", rel)
				}
				if !errors.Is(err, ErrEscape) || result.CodeOf(err) != result.PathEscape {
					t.Fatalf("OpenDir(%q) = %v, want ErrEscape", rel, err)
				}
			})
		}
	})
	lookalike := result.New(ErrEscape.Code, ErrEscape.Reason)
	if errors.Is(lookalike, ErrEscape) || errors.Is(ErrEscape, lookalike) {
		t.Fatal("an *Error with ErrEscape's code and words matches ErrEscape")
	}
}
