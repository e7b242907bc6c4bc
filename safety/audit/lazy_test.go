package audit

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

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
	old := syncFile
	syncFile = f
	t.Cleanup(func() { syncFile = old })
}
