package result_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// ErrUsed is how a package declares a refusal: once, as a sentinel.
var ErrUsed = result.New(result.Stale, "this id was already used; scan again for a fresh one")

// Classify turns any error into a code and a reason a client may see. An
// OS error goes through the one errno table: the path and the syscall's
// message never reach the reason.
func ExampleClassify() {
	err := &fs.PathError{Op: "openat", Path: "/home/someone/.ssh/id_ed25519", Err: syscall.ENOENT}
	code, reason := result.Classify(err)
	fmt.Println(code, "/", reason)

	// A Bastion *Error anywhere in the chain wins, with its own reason.
	code, reason = result.Classify(fmt.Errorf("take: %w", ErrUsed))
	fmt.Println(code, "/", reason)
	// Output:
	// NOT_FOUND / no such file or directory
	// STALE / this id was already used; scan again for a fresh one
}

// Fail builds the result a tool returns for an error. Only the reason is
// shown; the cause kept by Wrap is for logs and errors.Is.
func ExampleFail() {
	err := ErrUsed.Wrap(errors.New("id f-0123 taken at 12:00 by request 7"))
	r := result.Fail("reclaim", err, nil, time.Time{})
	fmt.Println(string(r.JSON()))
	// Output:
	// {"ok":false,"code":"STALE","action":"reclaim","reason":"this id was already used; scan again for a fresh one","detail":{},"duration_ms":0}
}

// Sentinels match by identity: an error made from a sentinel with With
// matches it even with a reworded reason, and still unwraps to its cause. A
// different sentinel with the very same words does not match.
func ExampleError_With() {
	err := ErrUsed.With("plan p-7 was already applied; plan again", syscall.EXDEV)
	twin := result.New(result.Stale, ErrUsed.Reason)

	fmt.Println(errors.Is(err, ErrUsed), errors.Is(err, syscall.EXDEV), errors.Is(twin, ErrUsed))
	fmt.Println(result.Reason(err))
	// Output:
	// true true false
	// plan p-7 was already applied; plan again
}
