package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// These tests inject faults the way CI can as root: chmod cannot stop root,
// so they use a read-only bind mount and a tiny full tmpfs. They never skip.

// mount runs mount(2) and registers an unmount at cleanup. The returned
// function unmounts early; it is safe to call twice.
func mount(t *testing.T, source, target, fstype string, flags uintptr, data string) func() {
	t.Helper()
	if err := syscall.Mount(source, target, fstype, flags, data); err != nil {
		t.Fatalf("mount %s on %s: %v (these tests need root)", source, target, err)
	}
	var once sync.Once
	undo := func() {
		once.Do(func() {
			if err := syscall.Unmount(target, 0); err != nil {
				if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
					t.Errorf("unmount %s: %v", target, err)
				}
			}
		})
	}
	t.Cleanup(undo)
	return undo
}

// readOnly bind-mounts dir read-only over itself.
func readOnly(t *testing.T, dir string) func() {
	t.Helper()
	undo := mount(t, dir, dir, "", syscall.MS_BIND, "")
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		undo()
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
	return undo
}

func TestIntentFailsClosedOnReadOnlyMount(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "audit.jsonl")
	l := openLog(t, Options{Path: path})
	if err := l.Event("startup", nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	undo := readOnly(t, dir)
	id, err := l.Intent("reclaim", map[string]any{"path": "/r/target"})
	e := wantCode(t, err, result.AuditUnavailable)
	if id != "" {
		t.Fatalf("a refused intent returned id %q", id)
	}
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(e.Reason, "read-only") ||
		!strings.Contains(e.Reason, "refused before anything was done") {
		t.Fatalf("err = %v; reason %q", err, e.Reason)
	}
	wantCode(t, l.Event("tick", nil), result.AuditUnavailable)

	undo()
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Fatal("the log changed while its directory was read-only")
	}
	// Writable again: the log goes on where it stopped.
	if id, err := l.Intent("reclaim", nil); err != nil || id != "i-2" {
		t.Fatalf("Intent after remount = %q, %v", id, err)
	}
	mustVerify(t, path, 2)
}

func TestOutcomeFailsClosedOnReadOnlyMount(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "audit.jsonl")
	l := openLog(t, Options{Path: path})
	id, err := l.Intent("reclaim", nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly(t, dir)
	e := wantCode(t, l.Outcome(id, "reclaim", result.OK, nil), result.AuditUnavailable)
	if !strings.Contains(e.Reason, "had already run") {
		t.Fatalf("reason %q", e.Reason)
	}
}

func TestOpenFailsOnReadOnlyMount(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	readOnly(t, dir)
	_, err := Open(Options{Path: filepath.Join(dir, "audit.jsonl"), Server: "sweepd", FailMode: FailOpen})
	wantCode(t, err, result.AuditUnavailable)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("err = %v, want EROFS", err)
	}
}

func TestIntentFailsClosedWhenDiskFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mount(t, "tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700")
	path := filepath.Join(dir, "audit.jsonl")
	l := openLog(t, Options{Path: path})
	if err := l.Event("startup", nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	filler := filepath.Join(dir, "filler")
	fill(t, filler)

	// Large enough to need a new page: part of it fits in the log's last
	// page, the rest hits ENOSPC, and the torn part must be cut back.
	big := strings.Repeat("x", 6000)
	_, err := l.Intent("reclaim", map[string]any{"pad": big})
	e := wantCode(t, err, result.AuditUnavailable)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(e.Reason, "no space left") {
		t.Fatalf("err = %v; reason %q", err, e.Reason)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Fatalf("a failed write left %d bytes behind", len(after)-len(before))
	}
	mustVerify(t, path, 1)

	// Space comes back: the log carries on, chain intact.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if id, err := l.Intent("reclaim", map[string]any{"pad": big}); err != nil || id != "i-2" {
		t.Fatalf("Intent after freeing space = %q, %v", id, err)
	}
	mustVerify(t, path, 2)
}

func TestFirstIntentFailsClosedOnFullDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mount(t, "tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700")
	path := filepath.Join(dir, "audit.jsonl")
	l := openLog(t, Options{Path: path})
	fill(t, filepath.Join(dir, "filler"))
	_, err := l.Intent("reclaim", nil)
	wantCode(t, err, result.AuditUnavailable)
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("the log holds %d bytes after a refused first write", fi.Size())
	}
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for range 1 << 10 {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling: %v", err)
			}
			return
		}
	}
	t.Fatal("the file system never filled up")
}
