package result

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClassifyNeverShowsSyscallText(t *testing.T) {
	secret := "/home/someone/.ssh/id_ed25519"
	for _, err := range []error{
		&os.PathError{Op: "open", Path: secret, Err: syscall.ENOENT},
		&os.PathError{Op: "unlinkat", Path: secret, Err: syscall.EACCES},
		&os.LinkError{Op: "rename", Old: secret, New: secret + ".bak", Err: syscall.EXDEV},
		fmt.Errorf("walking %s: %w", secret, &os.PathError{Op: "openat", Path: secret, Err: syscall.ELOOP}),
		errors.New("open " + secret + ": something the table does not know"),
		&os.PathError{Op: "open", Path: secret, Err: syscall.Errno(0x7ff)},
	} {
		code, reason := Classify(err)
		if !code.Valid() || code == OK {
			t.Errorf("%v: code %q", err, code)
		}
		for _, leak := range []string{secret, "id_ed25519", "open", "unlinkat", "rename", "errno"} {
			if strings.Contains(reason, leak) {
				t.Errorf("reason %q for %v shows %q", reason, err, leak)
			}
		}
		r := Fail("reclaim", err, nil, time.Now())
		if b := string(r.JSON()); strings.Contains(b, secret) {
			t.Errorf("result JSON shows the path: %s", b)
		}
	}
}

func TestClassifyMapsErrnoTable(t *testing.T) {
	pe := func(e syscall.Errno) error { return &os.PathError{Op: "x", Path: "p", Err: e} }
	for _, c := range []struct {
		err  error
		code Code
	}{
		{nil, OK},
		{context.DeadlineExceeded, Timeout},
		{fmt.Errorf("run: %w", context.DeadlineExceeded), Timeout},
		{context.Canceled, OperationFailed},
		{pe(syscall.ENOENT), NotFound},
		{pe(syscall.ENOTDIR), NotFound},
		{pe(syscall.ELOOP), PathEscape},
		{pe(syscall.EXDEV), PathEscape},
		{pe(syscall.EEXIST), PolicyDenied},
		{pe(syscall.ENOTEMPTY), OperationFailed},
		{pe(syscall.EACCES), OperationFailed},
		{pe(syscall.EPERM), OperationFailed},
		{pe(syscall.EROFS), OperationFailed},
		{pe(syscall.ENOSPC), OperationFailed},
		{pe(syscall.EBUSY), OperationFailed},
		{pe(syscall.ENAMETOOLONG), InvalidRequest},
		{pe(syscall.EIO), OperationFailed},
		{fs.ErrNotExist, NotFound},
		{fs.ErrExist, PolicyDenied},
		{fs.ErrPermission, OperationFailed},
		{errors.New("anything else"), OperationFailed},
		// A Bastion *Error anywhere in the chain wins over the errno.
		{fmt.Errorf("ctx: %w", Wrap(PathEscape, "the path leaves the root", syscall.ENOENT)), PathEscape},
	} {
		if got := CodeOf(c.err); got != c.code {
			t.Errorf("CodeOf(%v) = %s, want %s", c.err, got, c.code)
		}
	}
	if _, reason := Classify(pe(syscall.ENOSPC)); reason != "no space left on the device" {
		t.Errorf("ENOSPC reason %q", reason)
	}
	if _, reason := Classify(Wrap(NotFound, "unknown id", errors.New("internal detail"))); reason != "unknown id" {
		t.Errorf("a wrapped cause leaked into the reason: %q", reason)
	}
}

func TestErrorIsMatchesByCodeAndReason(t *testing.T) {
	sentinel := New(Stale, "this id was already used")
	if !errors.Is(New(Stale, "this id was already used"), sentinel) {
		t.Error("an equal *Error does not match the sentinel")
	}
	if !errors.Is(fmt.Errorf("take: %w", Wrap(Stale, "this id was already used", syscall.EIO)), sentinel) {
		t.Error("a wrapped *Error with the same code and reason does not match")
	}
	if errors.Is(New(Stale, "this id has expired"), sentinel) {
		t.Error("a different reason matches")
	}
	if errors.Is(New(NotFound, "this id was already used"), sentinel) {
		t.Error("a different code matches")
	}
	if !errors.Is(Wrap(OperationFailed, "rename failed", syscall.EXDEV), syscall.EXDEV) {
		t.Error("Wrap hides its cause from errors.Is")
	}
	if errors.Is(New(Stale, "x"), Wrap(Stale, "x", syscall.EIO)) {
		t.Error("a target carrying a cause must not match every *Error with its code and reason")
	}
}

func TestCodesAreClosedSet(t *testing.T) {
	if len(Codes) != 13 {
		t.Fatalf("%d codes; the set changed: update the schema in mcpkit too", len(Codes))
	}
	seen := map[Code]bool{}
	for _, c := range Codes {
		if !c.Valid() || seen[c] {
			t.Errorf("code %q invalid or repeated", c)
		}
		seen[c] = true
		if strings.ToUpper(string(c)) != string(c) {
			t.Errorf("code %q is not upper case", c)
		}
	}
	for _, c := range []Code{"", "ok", "DENIED", "OK ", "INTERNAL_ERROR\x00", "PERMISSION_DENIED"} {
		if c.Valid() {
			t.Errorf("made-up code %q is Valid", c)
		}
	}
}

func TestWithSetsOKOnlyForCodesThatRan(t *testing.T) {
	for _, c := range Codes {
		r := With("a", c, "r", nil, time.Time{})
		want := c == OK || c == OutputTruncated
		if r.OK != want {
			t.Errorf("With(%s).OK = %v", c, r.OK)
		}
		if r.Detail == nil {
			t.Errorf("With(%s) left detail nil (JSON null)", c)
		}
	}
}

func TestFailWithoutErrorIsNeverOK(t *testing.T) {
	r := Fail("reclaim", nil, nil, time.Time{})
	if r.OK || r.Code == OK {
		t.Fatalf("Fail(nil) = %+v: a failure reported as code OK", r)
	}
	if r.Code != InternalError {
		t.Fatalf("Fail(nil) code %s, want INTERNAL_ERROR", r.Code)
	}
}

func TestJSONNeverFails(t *testing.T) {
	for name, r := range map[string]OperationResult{
		"channel in detail": Success("scan", "done", map[string]any{"c": make(chan int)}, time.Time{}),
		"func in detail":    Success("scan", "done", func() {}, time.Time{}),
		"NaN duration":      {OK: true, Code: OK, Action: "scan", DurationMS: math.NaN()},
		"Inf and bad detail": {OK: true, Code: OK, Action: "scan", Detail: make(chan int),
			DurationMS: math.Inf(1)},
	} {
		b := r.JSON()
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("%s: JSON() gave %q: %v", name, b, err)
			continue
		}
		if got["code"] != string(InternalError) || got["ok"] != false || got["action"] != "scan" {
			t.Errorf("%s: %s, want an INTERNAL_ERROR result for action scan", name, b)
		}
		for _, k := range []string{"ok", "code", "action", "reason", "detail", "duration_ms"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: %s lacks %q", name, b, k)
			}
		}
	}
	ok := Success("scan", "done", map[string]any{"n": 1}, time.Now().Add(-5*time.Millisecond))
	var back OperationResult
	if err := json.Unmarshal(ok.JSON(), &back); err != nil || !back.OK || back.Code != OK || back.DurationMS < 5 {
		t.Fatalf("round trip %+v (%v)", back, err)
	}
}

func TestReasonJoinsTheReasonsOfAJoinedError(t *testing.T) {
	a := New(PolicyDenied, "first refusal")
	b := Wrap(InvalidRequest, "second refusal", errors.New("raw text that must not show"))
	if got := Reason(errors.Join(a, nil, b)); got != "first refusal; second refusal" {
		t.Fatalf("Reason(joined) = %q", got)
	}
	if got := Reason(errors.New("raw")); got != "the operation failed" {
		t.Fatalf("Reason(plain) = %q, want the generic reason", got)
	}
}
