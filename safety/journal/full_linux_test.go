//go:build linux

package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestBeginOnFullDiskIsCutBackAndTheJournalServesAgain: with the journal
// on a full 64 KiB tmpfs, an action whose begin record can be written only
// part-way is refused with ErrWrite (ENOSPC inside), moves nothing, never
// asks for its audit intent, and leaves the file as it was, ending in its
// last whole record. Once space returns the same Journal performs the
// action, and a restart reads every record back.
func TestBeginOnFullDiskIsCutBackAndTheJournalServesAgain(t *testing.T) {
	f := newFixture(t, "a.txt", "b.txt")
	state := filepath.Dir(f.jp)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", state, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v (this test needs root)", err)
	}
	t.Cleanup(func() { unix.Unmount(state, unix.MNT_DETACH) })
	j, _ := f.open(t)
	defer j.Close()
	if _, err := j.Do("move_file", "a", []Move{f.move(t, "a.txt", "x/a.txt")}, nil); err != nil {
		t.Fatal(err)
	}
	j.mu.Lock() // the first action's commit, so that only the begin record meets the full disk
	if err := j.settle(); err != nil {
		t.Fatal(err)
	}
	j.mu.Unlock()
	before, err := os.ReadFile(f.jp)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(state, "filler")
	testfs.FillDisk(t, filler)

	// A label longer than a page: the record cannot fit in the slack of
	// the file's last page, so the write stops part-way.
	label := strings.Repeat("l", 6000)
	asked := 0
	hook := func(*Action) error { asked++; return nil }
	for range 2 {
		_, err := j.Do("move_file", label, []Move{f.move(t, "b.txt", "x/b.txt")}, hook)
		if !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Do on a full disk: %v, want ErrWrite wrapping ENOSPC", err)
		}
		if !f.exists("b.txt") || f.exists("x/b.txt") {
			t.Fatal("b.txt moved although its begin record was not written")
		}
		if asked != 0 {
			t.Fatal("the audit intent was asked for although the begin record was not written")
		}
		after, err := os.ReadFile(f.jp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after, before) {
			t.Fatalf("the failed begin left %d bytes behind", len(after)-len(before))
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Do("move_file", label, []Move{f.move(t, "b.txt", "x/b.txt")}, hook); err != nil {
		t.Fatalf("Do once space returned: %v", err)
	}
	if f.exists("b.txt") || !f.exists("x/b.txt") || asked != 1 {
		t.Fatalf("the move did not happen once space returned (intent asked %d times)", asked)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, rec := f.open(t)
	defer j2.Close()
	if len(rec) != 0 {
		t.Fatalf("a restart recovered %+v: the journal was not whole", rec)
	}
	if got := len(j2.undo); got != 2 {
		t.Fatalf("after a restart the undo stack holds %d actions, want 2", got)
	}
}
