// Package result defines OperationResult, the one shape every Bastion tool
// answers with, and the closed set of codes it may carry.
//
// The package refuses to let raw error text reach a client: Fail turns any
// error into a code and a reason, and only reasons written by Bastion (those
// carried by *Error) are shown verbatim. A syscall's message never is.
package result

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"strings"
	"syscall"
	"time"
)

// Code is one of the closed set of result codes.
type Code string

// The closed set of codes. Nothing else ever appears in a result.
const (
	OK                   Code = "OK"
	PolicyDenied         Code = "POLICY_DENIED"
	InvalidRequest       Code = "INVALID_REQUEST"
	PathEscape           Code = "PATH_ESCAPE"
	NotFound             Code = "NOT_FOUND"
	Stale                Code = "STALE"
	NeedsExplicitRequest Code = "NEEDS_EXPLICIT_REQUEST"
	Timeout              Code = "TIMEOUT"
	LimitExceeded        Code = "LIMIT_EXCEEDED"
	OutputTruncated      Code = "OUTPUT_TRUNCATED"
	OperationFailed      Code = "OPERATION_FAILED"
	AuditUnavailable     Code = "AUDIT_UNAVAILABLE"
	InternalError        Code = "INTERNAL_ERROR"
)

// Codes lists every code, in the order above.
var Codes = []Code{OK, PolicyDenied, InvalidRequest, PathEscape, NotFound, Stale,
	NeedsExplicitRequest, Timeout, LimitExceeded, OutputTruncated, OperationFailed, AuditUnavailable, InternalError}

// Valid reports whether c is one of the closed set.
func (c Code) Valid() bool {
	for _, k := range Codes {
		if k == c {
			return true
		}
	}
	return false
}

// OperationResult is what every tool returns, as structured content and as
// JSON text.
type OperationResult struct {
	OK         bool    `json:"ok"`
	Code       Code    `json:"code"`
	Action     string  `json:"action"`
	Reason     string  `json:"reason"`
	Detail     any     `json:"detail"`
	DurationMS float64 `json:"duration_ms"`
}

// JSON renders r as compact JSON. It never fails: a detail that cannot be
// encoded is replaced by an INTERNAL_ERROR result.
func (r OperationResult) JSON() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		d := r.DurationMS
		if math.IsNaN(d) || math.IsInf(d, 0) {
			d = 0
		}
		b, err = json.Marshal(OperationResult{Code: InternalError, Action: r.Action,
			Reason: "the result could not be encoded", Detail: map[string]any{}, DurationMS: d})
		if err != nil { // unreachable: every field above encodes
			b = []byte(`{"ok":false,"code":"INTERNAL_ERROR","action":"","reason":"the result could not be encoded","detail":{},"duration_ms":0}`)
		}
	}
	return b
}

// Error is a refusal or failure with a code and a reason written for the
// model. Its Reason is safe to show to a client; Err (if any) is not shown.
//
// A package declares its refusals once as sentinels made with New, and
// callers test for them with errors.Is. Sentinels match by identity, never
// by wording: errors.Is(err, s) holds when err is s, or was made from s with
// s.Wrap or s.With (however its reason was reworded), and never for another
// *Error that merely has the same code and reason. The cause given to Wrap
// or With stays reachable too, so errors.Is(err, syscall.EXDEV) holds as
// well.
type Error struct {
	Code   Code
	Reason string
	Err    error

	from *Error // the sentinel this error was made from; nil for a sentinel
}

// Error returns the code, the reason and the cause's text, for logs; a
// client is shown only the reason (Classify).
func (e *Error) Error() string {
	if e.Err != nil {
		return string(e.Code) + ": " + e.Reason + ": " + e.Err.Error()
	}
	return string(e.Code) + ": " + e.Reason
}

// Unwrap returns the underlying error (the cause), for errors.Is and
// errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether e was made from target with Wrap or With, so that
// errors.Is(err, sentinel) matches by identity. (errors.Is itself already
// matches e against e.)
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e.from != nil && e.from == t
}

// Wrap returns an error made from the sentinel e: e's code and reason, with
// cause kept for logs and errors.Is (never shown to a client).
func (e *Error) Wrap(cause error) *Error { return e.With(e.Reason, cause) }

// With returns an error made from the sentinel e with a more specific
// reason: e's code, the given reason, and cause (which may be nil) kept for
// logs and errors.Is. errors.Is(err, e) holds for the result.
func (e *Error) With(reason string, cause error) *Error {
	from := e
	if e.from != nil {
		from = e.from
	}
	return &Error{Code: e.Code, Reason: reason, Err: cause, from: from}
}

// FromOS returns an error made from the sentinel e for the OS error cause:
// e's code, and the reason result's errno table gives cause, so an OS
// condition is worded in one place whichever package refuses with it. A
// cause the table does not know, or classifies under another code, keeps
// e's own reason. errors.Is(err, e) and errors.Is(err, cause) both hold.
func (e *Error) FromOS(cause error) *Error {
	if code, reason, ok := fromTable(cause); ok && code == e.Code {
		return e.With(reason, cause)
	}
	return e.Wrap(cause)
}

// New returns an *Error with the given code and reason. Declared as a
// package variable, it is a sentinel: errors.Is matches it and the errors
// made from it (Wrap, With), and nothing else.
func New(code Code, reason string) *Error { return &Error{Code: code, Reason: reason} }

// Wrap returns an *Error with code and reason that keeps err for logs and
// errors.Is, without ever showing err's text to a client. It is made from
// no sentinel; to refuse with a declared sentinel use its Wrap or With.
func Wrap(code Code, reason string, err error) *Error {
	return &Error{Code: code, Reason: reason, Err: err}
}

// errnoTable maps the syscall errors Bastion expects to a code and a reason.
// It is the one place where an OS error becomes a code and client-visible
// words: a package that refuses with its own sentinel for an OS error (the
// jail's ErrNotFound for ENOENT, say) takes the reason from here through
// the sentinel's FromOS, so a row's wording changes in this table only.
var errnoTable = []struct {
	err    error
	code   Code
	reason string
}{
	{context.DeadlineExceeded, Timeout, "the operation timed out"},
	{context.Canceled, OperationFailed, "the operation was cancelled"},
	{syscall.ENOENT, NotFound, "no such file or directory"},
	{syscall.ENOTDIR, NotFound, "a path component is not a directory"},
	{syscall.ELOOP, PathEscape, "the path goes through a symbolic link"},
	{syscall.EXDEV, PathEscape, "the path leaves the root or crosses into another mount"},
	{syscall.EEXIST, PolicyDenied, "the destination already exists"},
	{syscall.ENOTEMPTY, OperationFailed, "a directory was not empty (something wrote into it)"},
	{syscall.EACCES, OperationFailed, "permission denied by the operating system"},
	{syscall.EPERM, OperationFailed, "operation not permitted by the operating system"},
	{syscall.EROFS, OperationFailed, "the file system is read-only"},
	{syscall.ENOSPC, OperationFailed, "no space left on the device"},
	{syscall.EBUSY, OperationFailed, "the file or directory is busy"},
	{syscall.ENAMETOOLONG, InvalidRequest, "a name is too long"},
	{syscall.EIO, OperationFailed, "an input/output error occurred"},
	{fs.ErrNotExist, NotFound, "no such file or directory"},
	{fs.ErrExist, PolicyDenied, "the destination already exists"},
	{fs.ErrPermission, OperationFailed, "permission denied by the operating system"},
}

// Classify returns the code and the client-safe reason for err. An *Error
// anywhere in the chain wins; otherwise the errno table decides; anything
// else is OPERATION_FAILED with a generic reason.
func Classify(err error) (Code, string) {
	if err == nil {
		return OK, ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code, e.Reason
	}
	if code, reason, ok := fromTable(err); ok {
		return code, reason
	}
	return OperationFailed, "the operation failed"
}

// fromTable returns the errno table's code and reason for err, if a row
// matches.
func fromTable(err error) (Code, string, bool) {
	for _, row := range errnoTable {
		if errors.Is(err, row.err) {
			return row.code, row.reason, true
		}
	}
	return "", "", false
}

// Reason returns the client-safe reason for err: Classify's reason, or, for
// an error that joins several (errors.Join), each one's reason joined by
// "; ". It is the one way a server turns an error into words for a person
// or a client.
func Reason(err error) string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var parts []string
		for _, e := range j.Unwrap() {
			if e != nil {
				parts = append(parts, Reason(e))
			}
		}
		return strings.Join(parts, "; ")
	}
	_, reason := Classify(err)
	return reason
}

// CodeOf returns Classify's code.
func CodeOf(err error) Code { c, _ := Classify(err); return c }

// Success builds an OK result.
func Success(action, reason string, detail any, start time.Time) OperationResult {
	return finish(OperationResult{OK: true, Code: OK, Action: action, Reason: reason, Detail: detail}, start)
}

// Fail builds a failed result from err. detail may be nil. A nil err is a
// server bug, reported as INTERNAL_ERROR rather than as a result that says
// both "failed" and "OK".
func Fail(action string, err error, detail any, start time.Time) OperationResult {
	code, reason := Classify(err)
	if code == OK {
		code, reason = InternalError, "the server reported a failure without a cause"
	}
	return finish(OperationResult{OK: false, Code: code, Action: action, Reason: reason, Detail: detail}, start)
}

// With builds a result with an explicit code; ok is true only for OK and
// for codes that report something that ran (OUTPUT_TRUNCATED).
func With(action string, code Code, reason string, detail any, start time.Time) OperationResult {
	ok := code == OK || code == OutputTruncated
	return finish(OperationResult{OK: ok, Code: code, Action: action, Reason: reason, Detail: detail}, start)
}

func finish(r OperationResult, start time.Time) OperationResult {
	if r.Detail == nil {
		r.Detail = map[string]any{}
	}
	if !start.IsZero() {
		r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	}
	return r
}
