package sandbox

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestCwdErrorClassifiesThroughTheErrnoTable pins the code a working
// directory the helper cannot open gets for each openat2 error.
func TestCwdErrorClassifiesThroughTheErrnoTable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want *result.Error
		code result.Code
	}{
		{"enoent", unix.ENOENT, errNoCwd, result.NotFound},
		{"enotdir", unix.ENOTDIR, errNoCwd, result.NotFound},
		{"eloop", unix.ELOOP, errCwdEscape, result.PathEscape},
		{"exdev", unix.EXDEV, errCwdEscape, result.PathEscape},
		{"eagain", unix.EAGAIN, errCwdEscape, result.PathEscape},
		{"enametoolong", unix.ENAMETOOLONG, errCwdEscape, result.PathEscape},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := cwdError(c.err)
			if !errors.Is(err, c.want) || !errors.Is(err, c.err) || result.CodeOf(err) != c.code {
				t.Fatalf("cwdError(%v) = %v, want %v with code %s", c.err, err, c.want, c.code)
			}
		})
	}
}
