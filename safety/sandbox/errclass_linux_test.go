package sandbox

import (
	"context"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestOSErrorsAreClassifiedThroughTheErrnoTable pins the code (and the
// sentinel) that a failed start (startError) and a working directory the
// helper cannot open (cwdError) get for each kind of OS error; the cause
// stays reachable.
func TestOSErrorsAreClassifiedThroughTheErrnoTable(t *testing.T) {
	exec := func(e unix.Errno) error { return &os.PathError{Op: "fork/exec", Path: "x", Err: e} }
	own := result.New(result.PolicyDenied, "already a refusal")
	for _, c := range []struct {
		name     string
		classify func(error) error
		err      error
		want     *result.Error
	}{
		{"start/enoent", startError, exec(unix.ENOENT), errNoExecutable},
		{"start/enotdir", startError, exec(unix.ENOTDIR), errNoExecutable},
		{"start/eacces", startError, exec(unix.EACCES), errExecDenied},
		{"start/eperm", startError, exec(unix.EPERM), errExecDenied},
		{"start/enospc", startError, exec(unix.ENOSPC), errStart},
		{"start/eloop", startError, exec(unix.ELOOP), errStart},
		{"start/unknown", startError, errors.New("odd"), errStart},
		{"start/canceled", startError, context.Canceled, errStart},
		{"start/refusal-kept", startError, own, own},
		{"cwd/enoent", cwdError, unix.ENOENT, errNoCwd},
		{"cwd/enotdir", cwdError, unix.ENOTDIR, errNoCwd},
		{"cwd/eloop", cwdError, unix.ELOOP, errCwdEscape},
		{"cwd/exdev", cwdError, unix.EXDEV, errCwdEscape},
		{"cwd/eagain", cwdError, unix.EAGAIN, errCwdEscape},
		{"cwd/enametoolong", cwdError, unix.ENAMETOOLONG, errCwdEscape},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.classify(c.err)
			if !errors.Is(err, c.want) || result.CodeOf(err) != c.want.Code {
				t.Fatalf("%v became %v, want %v", c.err, err, c.want)
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("%v became %v, which lost its cause", c.err, err)
			}
		})
	}
}
