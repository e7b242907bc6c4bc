package audit

import (
	"bytes"
	"errors"
	"github.com/bastion-mcp/bastion/safety/testfs"
	"log/slog"
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

// smallDisk mounts a 64 KiB tmpfs and returns the path of a log on it.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mount(t, "tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700")
	return filepath.Join(dir, "audit.jsonl")
}

// padToPageEnd writes events until the log ends between 100 and 200 bytes
// short of a page boundary, so that on a full tmpfs the next record's
// first bytes fit in the last page and the rest hits ENOSPC: the write
// itself fails part-way.
func padToPageEnd(t *testing.T, l *Log, path string) {
	t.Helper()
	for range 8 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		room := 4096 - fi.Size()%4096
		if room >= 100 && room <= 200 {
			return
		}
		// An event with an empty pad is about 150 bytes; aim at 150 short.
		pad := (room - 150 - 160 + 4096) % 4096
		if err := l.Event("pad", map[string]any{"pad": strings.Repeat("p", int(pad))}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("could not bring the log near a page boundary")
}

func TestRecordFailsClosedWhenDiskFills(t *testing.T) {
	big := map[string]any{"pad": strings.Repeat("x", 600)}
	cases := []struct {
		name  string
		first bool // the log is empty when the disk fills
		write func(l *Log) error
	}{
		{"intent cut off part-way", false, func(l *Log) error { _, err := l.Intent("reclaim", big); return err }},
		{"outcome cut off part-way", false, func(l *Log) error { return l.Outcome("i-1", "reclaim", result.OK, big) }},
		{"lazy outcome cut off part-way", false, func(l *Log) error { return l.OutcomeLazy("i-1", "move_file", result.OK, big) }},
		{"event cut off part-way", false, func(l *Log) error { return l.Event("tick", big) }},
		{"first record of an empty log", true, func(l *Log) error { _, err := l.Intent("reclaim", nil); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := smallDisk(t)
			l := openLog(t, Options{Path: path})
			if !c.first {
				padToPageEnd(t, l, path)
			}
			before, _ := os.ReadFile(path)
			filler := filepath.Join(filepath.Dir(path), "filler")
			testfs.FillDisk(t, filler)

			e := wantCode(t, c.write(l), result.AuditUnavailable)
			if !errors.Is(e, syscall.ENOSPC) || !strings.Contains(e.Reason, "no space left") {
				t.Fatalf("err = %v; reason %q", e, e.Reason)
			}
			after, _ := os.ReadFile(path)
			if string(after) != string(before) {
				t.Fatalf("a failed write left %d bytes behind", len(after)-len(before))
			}
			n := bytes.Count(before, []byte{'\n'})
			mustVerify(t, path, n)

			// Space comes back: the same Log carries on, chain intact.
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if err := c.write(l); err != nil {
				t.Fatalf("after freeing space: %v", err)
			}
			mustVerify(t, path, n+1)
		})
	}
}

func TestTornTailOnFullDisk(t *testing.T) {
	for _, mode := range []string{FailClosed, FailOpen} {
		t.Run(mode, func(t *testing.T) {
			path := smallDisk(t)
			l := openLog(t, Options{Path: path})
			for range 3 {
				if err := l.Event("tick", nil); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			whole, _ := os.ReadFile(path)
			torn := append(append([]byte(nil), whole...), `{"seq":4,"ti`...)
			os.WriteFile(path, torn, 0o600)
			filler := filepath.Join(filepath.Dir(path), "filler")
			testfs.FillDisk(t, filler)

			var logs bytes.Buffer
			l, err := Open(Options{Path: path, Server: "sweepd", FailMode: mode, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if mode == FailClosed {
				e := wantCode(t, err, result.AuditUnavailable)
				if !strings.Contains(e.Reason, "could not be set aside") || !strings.Contains(e.Reason, "no space left") {
					t.Fatalf("reason: %s", e.Reason)
				}
			} else {
				if err != nil || !strings.Contains(logs.String(), "could not be set aside") {
					t.Fatalf("open mode: %v, logs %q", err, logs.String())
				}
				l.Close()
			}
			if b, _ := os.ReadFile(path); string(b) != string(torn) || len(sidecars(t, path)) != 0 {
				t.Fatal("a set-aside that failed changed the log or left a sidecar")
			}

			os.Remove(filler)
			l = openLog(t, Options{Path: path, FailMode: mode})
			wantRecovered(t, path, whole, []byte(`{"seq":4,"ti`))
			if err := l.Event("tick", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecoveredRecordWaitsForSpace: the disk has room for the sidecar but
// not for the recovered record (the log's last page is nearly full and no
// page is free once the sidecar is written). Open mode starts, and the
// recovered record is written before the next record once space returns;
// closed mode refuses to start, and the next start finds a whole log (the
// sidecar keeps the bytes).
func TestRecoveredRecordWaitsForSpace(t *testing.T) {
	for _, mode := range []string{FailOpen, FailClosed} {
		t.Run(mode, func(t *testing.T) {
			path := smallDisk(t)
			l := openLog(t, Options{Path: path})
			padToPageEnd(t, l, path)
			l.Close()
			whole, _ := os.ReadFile(path)
			tail := []byte(`{"seq":99,"ti`)
			os.WriteFile(path, append(append([]byte(nil), whole...), tail...), 0o600)
			spare := filepath.Join(filepath.Dir(path), "spare")
			os.WriteFile(spare, []byte("x"), 0o600) // one page, freed after the fill
			filler := filepath.Join(filepath.Dir(path), "filler")
			testfs.FillDisk(t, filler)
			os.Remove(spare)

			var logs bytes.Buffer
			l, err := Open(Options{Path: path, Server: "sweepd", FailMode: mode, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if b, _ := os.ReadFile(path); string(b) != string(whole) || len(sidecars(t, path)) != 1 {
				t.Fatalf("the tail was not set aside into one sidecar: %d bytes, sidecars %q", len(b), sidecars(t, path))
			}
			os.Remove(filler)
			if mode == FailClosed {
				e := wantCode(t, err, result.AuditUnavailable)
				if !errors.Is(e, syscall.ENOSPC) {
					t.Fatalf("err = %v", err)
				}
				l = openLog(t, Options{Path: path})
				mustVerify(t, path, bytes.Count(whole, []byte{'\n'}))
				return
			}
			if err != nil || !strings.Contains(logs.String(), "could not be written yet") {
				t.Fatalf("open mode: %v, logs %q", err, logs.String())
			}
			defer l.Close()
			if err := l.Event("tick", nil); err != nil {
				t.Fatal(err)
			}
			rep := wantRecovered(t, path, whole, tail)
			if rep.Recoveries[0].Seq != rep.LastSeq-1 {
				t.Fatalf("the recovered record is not just before the next record: %+v", rep)
			}
		})
	}
}
