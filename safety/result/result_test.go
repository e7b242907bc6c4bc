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
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ENOENT path error", &os.PathError{Op: "open", Path: secret, Err: syscall.ENOENT}},
		{"EACCES path error", &os.PathError{Op: "unlinkat", Path: secret, Err: syscall.EACCES}},
		{"EXDEV link error", &os.LinkError{Op: "rename", Old: secret, New: secret + ".bak", Err: syscall.EXDEV}},
		{"wrapped ELOOP", fmt.Errorf("walking %s: %w", secret, &os.PathError{Op: "openat", Path: secret, Err: syscall.ELOOP})},
		{"unknown text", errors.New("open " + secret + ": something the table does not know")},
		{"unknown errno", &os.PathError{Op: "open", Path: secret, Err: syscall.Errno(0x7ff)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, reason := Classify(c.err)
			if !code.Valid() || code == OK {
				t.Errorf("%v: code %q", c.err, code)
			}
			for _, leak := range []string{secret, "id_ed25519", "open", "unlinkat", "rename", "errno"} {
				if strings.Contains(reason, leak) {
					t.Errorf("reason %q for %v shows %q", reason, c.err, leak)
				}
			}
			r := Fail("reclaim", c.err, nil, time.Now())
			if b := string(r.JSON()); strings.Contains(b, secret) {
				t.Errorf("result JSON shows the path: %s", b)
			}
		})
	}
}

// errnoCodes pins the code each OS error of result's errno table gets,
// grouped by code. It is written out here, not read from the table, so a
// changed row fails TestClassifyMapsErrnoTable.
var errnoCodes = map[Code][]error{
	Timeout:        {context.DeadlineExceeded},
	NotFound:       {syscall.ENOENT, syscall.ENOTDIR, fs.ErrNotExist},
	PathEscape:     {syscall.ELOOP, syscall.EXDEV},
	PolicyDenied:   {syscall.EEXIST, fs.ErrExist},
	InvalidRequest: {syscall.ENAMETOOLONG},
	OperationFailed: {context.Canceled, syscall.ENOTEMPTY, syscall.EACCES, syscall.EPERM, syscall.EROFS,
		syscall.ENOSPC, syscall.EBUSY, syscall.EIO, fs.ErrPermission},
}

func TestClassifyMapsErrnoTable(t *testing.T) {
	pe := func(e syscall.Errno) error { return &os.PathError{Op: "x", Path: "p", Err: e} }
	pinned := map[error]bool{}
	for _, code := range Codes {
		for _, err := range errnoCodes[code] {
			pinned[err] = true
			name := string(code) + "/" + strings.NewReplacer(" ", "_", "/", "_").Replace(err.Error())
			if errno, ok := err.(syscall.Errno); ok {
				err = pe(errno) // as the OS reports it
			}
			t.Run(name, func(t *testing.T) {
				if got := CodeOf(err); got != code {
					t.Errorf("CodeOf(%v) = %s, want %s", err, got, code)
				}
				if got := CodeOf(fmt.Errorf("wrapped: %w", err)); got != code {
					t.Errorf("CodeOf(wrapped %v) = %s, want %s", err, got, code)
				}
			})
		}
	}
	for _, row := range errnoTable {
		if !pinned[row.err] {
			t.Errorf("the errno table's row for %v has no pinned code in errnoCodes", row.err)
		}
	}
	for _, c := range []struct {
		name string
		err  error
		code Code
	}{
		{"nil", nil, OK},
		{"unknown", errors.New("anything else"), OperationFailed},
		// A Bastion *Error anywhere in the chain wins over the errno.
		{"Error wins over errno", fmt.Errorf("ctx: %w", Wrap(PathEscape, "the path leaves the root", syscall.ENOENT)), PathEscape},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CodeOf(c.err); got != c.code {
				t.Errorf("CodeOf(%v) = %s, want %s", c.err, got, c.code)
			}
		})
	}
	if _, reason := Classify(pe(syscall.ENOSPC)); reason != "no space left on the device" {
		t.Errorf("ENOSPC reason %q", reason)
	}
	if _, reason := Classify(Wrap(NotFound, "unknown id", errors.New("internal detail"))); reason != "unknown id" {
		t.Errorf("a wrapped cause leaked into the reason: %q", reason)
	}
}

func TestErrorIsMatchesBySentinelIdentity(t *testing.T) {
	used := New(Stale, "this id was already used")
	twin := New(Stale, "this id was already used") // same code and wording, another sentinel
	other := New(NotFound, "unknown id")
	for _, c := range []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"sentinel itself", used, used, true},
		{"wrapped sentinel", fmt.Errorf("take: %w", used), used, true},
		{"made with Wrap", used.Wrap(syscall.EIO), used, true},
		{"made with With, reworded", used.With("plan p-1 was already applied", nil), used, true},
		{"made from a made error", used.With("more specific", nil).Wrap(syscall.EIO), used, true},
		{"made error wrapped by fmt", fmt.Errorf("take: %w", used.With("reworded", syscall.EIO)), used, true},
		{"same wording, other sentinel", twin, used, false},
		{"made from the other sentinel", twin.Wrap(syscall.EIO), used, false},
		{"ad hoc Error with the same words", New(Stale, "this id was already used"), used, false},
		{"result.Wrap with the same words", Wrap(Stale, "this id was already used", syscall.EIO), used, false},
		{"different sentinel", other.Wrap(nil), used, false},
		{"made error is not a target", used, used.Wrap(syscall.EIO), false},
		{"unwraps to the cause of Wrap", used.Wrap(syscall.EXDEV), syscall.EXDEV, true},
		{"unwraps to the cause of With", used.With("reworded", syscall.EXDEV), syscall.EXDEV, true},
		{"unwraps to the cause of result.Wrap", Wrap(OperationFailed, "rename failed", syscall.EXDEV), syscall.EXDEV, true},
		{"not another cause", used.Wrap(syscall.EXDEV), syscall.ENOENT, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := errors.Is(c.err, c.target); got != c.want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", c.err, c.target, got, c.want)
			}
		})
	}
}

func TestMadeErrorsKeepCodeAndClassifyTheirOwnReason(t *testing.T) {
	sentinel := New(PathEscape, "the path leaves the root")
	for _, c := range []struct {
		name   string
		err    error
		reason string
	}{
		{"Wrap keeps the reason", sentinel.Wrap(syscall.EXDEV), "the path leaves the root"},
		{"With rewords", sentinel.With("the path leaves the root or crosses into another mount", syscall.EXDEV),
			"the path leaves the root or crosses into another mount"},
		{"wrapped by fmt", fmt.Errorf("open: %w", sentinel.With("specific", errors.New("raw /secret"))), "specific"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, reason := Classify(c.err)
			if code != PathEscape || reason != c.reason {
				t.Errorf("Classify = %s %q, want PATH_ESCAPE %q", code, reason, c.reason)
			}
			if r := Fail("a", c.err, nil, time.Time{}); strings.Contains(string(r.JSON()), "secret") {
				t.Errorf("the cause's text reached the result: %s", r.JSON())
			}
		})
	}
	if sentinel.Reason != "the path leaves the root" || sentinel.Err != nil {
		t.Errorf("With changed the sentinel: %+v", sentinel)
	}
}

func TestCodesAreClosedSet(t *testing.T) {
	if len(Codes) != 13 {
		// The result schema's code enum follows Codes by itself
		// (mcpkit.ResultSchema); the servers' tools_list.json goldens and
		// README's list of codes do not.
		t.Fatalf("%d codes; the set changed: regenerate the servers' tools_list.json goldens (-update) and update README's codes", len(Codes))
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
		t.Run(string(c), func(t *testing.T) {
			r := With("a", c, "r", nil, time.Time{})
			want := c == OK || c == OutputTruncated
			if r.OK != want {
				t.Errorf("With(%s).OK = %v", c, r.OK)
			}
			if r.Detail == nil {
				t.Errorf("With(%s) left detail nil (JSON null)", c)
			}
		})
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
		t.Run(name, func(t *testing.T) {
			b := r.JSON()
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("JSON() gave %q: %v", b, err)
			}
			if got["code"] != string(InternalError) || got["ok"] != false || got["action"] != "scan" {
				t.Errorf("%s, want an INTERNAL_ERROR result for action scan", b)
			}
			for _, k := range []string{"ok", "code", "action", "reason", "detail", "duration_ms"} {
				if _, ok := got[k]; !ok {
					t.Errorf("%s lacks %q", b, k)
				}
			}
		})
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

func TestFromOSWordsTheCauseThroughTheErrnoTable(t *testing.T) {
	notFound := New(NotFound, "no such object in this package's words")
	escape := New(PathEscape, "the path leaves the root")
	pe := func(e syscall.Errno) error { return &os.PathError{Op: "openat", Path: "/secret", Err: e} }
	for _, c := range []struct {
		name     string
		sentinel *Error
		cause    error
		reason   string
	}{
		{"known errno takes the table's reason", notFound, syscall.ENOENT, "no such file or directory"},
		{"path error takes the table's reason", notFound, pe(syscall.ENOENT), "no such file or directory"},
		{"EXDEV for an escape", escape, syscall.EXDEV, "the path leaves the root or crosses into another mount"},
		{"unknown cause keeps the sentinel's reason", escape, errors.New("path escapes from parent"), "the path leaves the root"},
		{"other code keeps the sentinel's reason", notFound, syscall.EACCES, "no such object in this package's words"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.sentinel.FromOS(c.cause)
			if code, reason := Classify(err); code != c.sentinel.Code || reason != c.reason {
				t.Errorf("Classify = %s %q, want %s %q", code, reason, c.sentinel.Code, c.reason)
			}
			if !errors.Is(err, c.sentinel) || !errors.Is(err, c.cause) {
				t.Errorf("%v does not match both its sentinel and its cause", err)
			}
		})
	}
}
