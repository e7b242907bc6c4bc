//go:build linux

package organizer

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/config"
)

// TestAuditUnavailableMovesNothing: with the audit log's directory made
// read-only (a real read-only bind mount: chmod does not stop root), no
// intent record can be written, so apply_plan and move_file refuse with
// AUDIT_UNAVAILABLE and every file stays where it was.
func TestAuditUnavailableMovesNothing(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("report.pdf", "pdf")
	e.put("photo.jpg", "jpg")
	p := e.plan()
	if p.MoveCount != 2 {
		t.Fatalf("plan moves %d files, want 2", p.MoveCount)
	}
	if err := unix.Mount(e.auditDir, e.auditDir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(e.auditDir, unix.MNT_DETACH) })
	if err := unix.Mount("", e.auditDir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if r := e.call("apply_plan", map[string]any{"plan_id": p.PlanID}); r.Code != "AUDIT_UNAVAILABLE" {
		t.Fatalf("apply_plan with the audit log unwritable: %s %s", r.Code, r.Reason)
	}
	if r := e.call("move_file", map[string]any{"src": "report.pdf", "dest": "Documents/report.pdf"}); r.Code != "AUDIT_UNAVAILABLE" {
		t.Fatalf("move_file with the audit log unwritable: %s %s", r.Code, r.Reason)
	}
	for _, f := range []string{"report.pdf", "photo.jpg"} {
		if !e.exists(f) {
			t.Fatalf("%s moved although no intent record could be written", f)
		}
	}
	if e.exists("Documents") || e.exists("Images") {
		t.Fatal("a destination folder was created although nothing may happen")
	}
}
