//go:build linux

package organizer

import (
	"github.com/bastion-mcp/bastion/safety/testfs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
)

// TestAuditDiskFullMovesNothingThenServesAgain: with the audit log on a
// full 64 KiB tmpfs, move_file answers AUDIT_UNAVAILABLE and nothing
// moves; the log still ends in a whole record. Once space returns, the
// same server process moves the file, and the chain verifies.
func TestAuditDiskFullMovesNothingThenServesAgain(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("report.pdf", "pdf")
	e.put("notes.txt", "txt")
	if err := unix.Mount("tmpfs", e.auditDir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(e.auditDir, unix.MNT_DETACH) })
	logPath := filepath.Join(e.auditDir, "audit.jsonl")
	// One move that works, so the log on the small disk holds records.
	if r := e.call("move_file", map[string]any{"src": "notes.txt", "dest": "Documents/notes.txt"}); r.Code != "OK" {
		t.Fatalf("move_file before the disk fills: %s %s", r.Code, r.Reason)
	}
	padToPageEnd(t, logPath)
	filler := filepath.Join(e.auditDir, "filler")
	testfs.FillDisk(t, filler)

	for _, name := range []string{"move_file", "move_file again"} {
		t.Run(name, func(t *testing.T) {
			r := e.call("move_file", map[string]any{"src": "report.pdf", "dest": "Documents/report.pdf"})
			if r.Code != "AUDIT_UNAVAILABLE" {
				t.Fatalf("move_file with the audit disk full: %s %s", r.Code, r.Reason)
			}
			if !e.exists("report.pdf") || e.exists("Documents/report.pdf") {
				t.Fatal("report.pdf moved although no intent record could be written")
			}
			if rep, err := audit.VerifyFile(logPath); err != nil || !rep.OK {
				t.Fatalf("the log does not end in a whole record: %+v, %v", rep, err)
			}
		})
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if r := e.call("move_file", map[string]any{"src": "report.pdf", "dest": "Documents/report.pdf"}); r.Code != "OK" {
		t.Fatalf("move_file once space returned: %s %s", r.Code, r.Reason)
	}
	if e.exists("report.pdf") || !e.exists("Documents/report.pdf") {
		t.Fatal("the move did not happen once space returned")
	}
	if rep, err := audit.VerifyFile(logPath); err != nil || !rep.OK || rep.Records < 4 {
		t.Fatalf("audit log after the fault: %+v, %v", rep, err)
	}
}

// padToPageEnd appends events through a second writer of the same log
// (the log allows several) until the file ends 50 to 150 bytes short of a
// page boundary: on a full tmpfs the next record then fits only part-way.
func padToPageEnd(t *testing.T, path string) {
	t.Helper()
	l, err := audit.Open(audit.Options{Path: path, Server: "organizerd"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 8 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		room := 4096 - fi.Size()%4096
		if room >= 50 && room <= 150 {
			return
		}
		pad := (room - 100 - 160 + 4096) % 4096 // an event with an empty pad is about 160 bytes
		if err := l.Event("pad", map[string]any{"pad": strings.Repeat("p", int(pad))}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("could not bring the log near a page boundary")
}
