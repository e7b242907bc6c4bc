package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestLazyOutcomeIsReadableWhenItReturns: a lazy outcome is in the file,
// chained, before OutcomeLazy returns, and the next records chain after it.
func TestLazyOutcomeIsReadableWhenItReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path, Server: "organizerd"})
	for i := range 50 {
		id, err := l.Intent("move_file", map[string]any{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.OutcomeLazy(id, "move_file", result.OK, map[string]any{"moved": 1}); err != nil {
			t.Fatal(err)
		}
		lines := readLines(t, path)
		last := decodeLine(t, lines[len(lines)-1])
		if last.Kind != KindOutcome || last.Intent == nil || *last.Intent != id {
			t.Fatalf("round %d: the last line is %+v, want the outcome of %s", i, last, id)
		}
	}
	mustVerify(t, path, 100)
}

// TestCloseWaitsForLazyFsyncs: Close returns only after every background
// fsync of a lazy record has ended.
func TestCloseWaitsForLazyFsyncs(t *testing.T) {
	var running, ended atomic.Int32
	var hold atomic.Bool
	release := make(chan struct{})
	swapSync(t, func(f *os.File) error {
		if hold.Load() {
			running.Add(1)
			<-release
			defer ended.Add(1)
		}
		return f.Sync()
	})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	if err := l.Event("start", nil); err != nil { // creates the file: synced in line
		t.Fatal(err)
	}
	hold.Store(true)
	for range 3 {
		if err := l.OutcomeLazy("i-1", "move_file", result.OK, nil); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while lazy fsyncs were still running")
	default:
	}
	close(release)
	<-closed
	if ended.Load() != 3 || running.Load() != 3 {
		t.Fatalf("Close returned with %d of %d fsyncs ended (want the 3 lazy ones)", ended.Load(), running.Load())
	}
}

// TestFailedLazyFsyncRefusesTheNextRecordOnce: when the background fsync of
// a lazy record fails, the next record is refused with AUDIT_UNAVAILABLE
// (closed mode), and the one after it is written: the failure is reported,
// never swallowed, and does not stop the server for good.
func TestFailedLazyFsyncRefusesTheNextRecordOnce(t *testing.T) {
	var fail atomic.Bool
	swapSync(t, func(f *os.File) error {
		if fail.Load() {
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
		return f.Sync()
	})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path, Server: "organizerd"})
	id, err := l.Intent("move_file", nil)
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := l.OutcomeLazy(id, "move_file", result.OK, nil); err != nil {
		t.Fatalf("the write itself succeeded, so OutcomeLazy must too: %v", err)
	}
	l.lazy.Wait() // the background fsync has failed
	fail.Store(false)
	_, err = l.Intent("move_file", nil)
	e := wantCode(t, err, result.AuditUnavailable)
	if !errors.Is(e, syscall.EIO) {
		t.Fatalf("the refusal should carry the fsync's EIO: %v", e)
	}
	if _, err := l.Intent("move_file", nil); err != nil {
		t.Fatalf("the record after the refusal: %v", err)
	}
	mustVerify(t, path, 3)
}

// swapSync replaces the fsync of records for one test.
func swapSync(t *testing.T, f func(*os.File) error) {
	t.Helper()
	old, oldStart, oldThen := syncFile, startSync, syncThen
	syncFile = f
	startSync = func(file *os.File) func() error { return func() error { return f(file) } }
	syncThen = func(file *os.File, then func(error)) { go func() { then(f(file)) }() }
	t.Cleanup(func() { syncFile, startSync, syncThen = old, oldStart, oldThen })
}

// TestIntentPendingIsReadableAtOnceAndDurableOnlyAfterItsFsync: the
// record of IntentPending is in the file when it returns, durable returns
// only once its fsync is done, and an fsync that fails makes durable
// refuse the act (AUDIT_UNAVAILABLE carrying EIO) in closed mode, without
// refusing the next record; in open mode durable says nothing.
func TestIntentPendingIsReadableAtOnceAndDurableOnlyAfterItsFsync(t *testing.T) {
	release := make(chan struct{})
	var fail, hold atomic.Bool
	swapSync(t, func(f *os.File) error {
		if hold.Load() {
			<-release
		}
		if fail.Load() {
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
		return f.Sync()
	})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path, Server: "terminald"})
	if _, err := l.Intent("first", nil); err != nil { // creates the file
		t.Fatal(err)
	}
	hold.Store(true)
	id, durable, err := l.IntentPending("run_command", map[string]any{"argv": []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"run_command"`) {
		t.Fatal("the pending intent is not in the file when IntentPending returns")
	}
	done := make(chan error, 1)
	go func() { done <- durable() }()
	select {
	case err := <-done:
		t.Fatalf("durable returned (%v) before the record's fsync finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("durable after a good fsync: %v", err)
	}
	hold.Store(false)
	if err := l.Outcome(id, "run_command", result.OK, nil); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	_, durable, err = l.IntentPending("run_command", nil)
	if err != nil {
		t.Fatalf("the write itself succeeded, so IntentPending must too: %v", err)
	}
	e := wantCode(t, durable(), result.AuditUnavailable)
	if !errors.Is(e, syscall.EIO) {
		t.Fatalf("the refusal should carry the fsync's EIO: %v", e)
	}
	fail.Store(false)
	if _, err := l.Intent("after", nil); err != nil {
		t.Fatalf("the record after a refused pending intent: %v", err)
	}
	mustVerify(t, path, 5)

	fail.Store(true)
	open := openLog(t, Options{Path: filepath.Join(t.TempDir(), "open.jsonl"), Server: "terminald", FailMode: "open"})
	if _, err := open.Intent("first", nil); err != nil {
		t.Fatal(err)
	}
	if _, durable, err := open.IntentPending("run_command", nil); err != nil || durable() != nil {
		t.Fatalf("open mode: %v", err)
	}
}
