package sandbox

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestStartErrorClassifiesThroughTheErrnoTable pins the code (and sentinel)
// a failed start gets for each kind of OS error.
func TestStartErrorClassifiesThroughTheErrnoTable(t *testing.T) {
	own := result.New(result.PolicyDenied, "already a refusal")
	for _, c := range []struct {
		name string
		err  error
		want *result.Error
		code result.Code
	}{
		{"enoent", &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.ENOENT}, errNoExecutable, result.NotFound},
		{"enotdir", &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.ENOTDIR}, errNoExecutable, result.NotFound},
		{"eacces", &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.EACCES}, errExecDenied, result.OperationFailed},
		{"eperm", &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.EPERM}, errExecDenied, result.OperationFailed},
		{"enospc", &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.ENOSPC}, errStart, result.OperationFailed},
		{"eloop", &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.ELOOP}, errStart, result.OperationFailed},
		{"unknown", errors.New("odd"), errStart, result.OperationFailed},
		{"canceled", context.Canceled, errStart, result.OperationFailed},
		{"refusal-kept", own, own, result.PolicyDenied},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := startError(c.err)
			if !errors.Is(err, c.want) || result.CodeOf(err) != c.code {
				t.Fatalf("startError(%v) = %v, want %v with code %s", c.err, err, c.want, c.code)
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("startError(%v) = %v lost its cause", c.err, err)
			}
		})
	}
}
