package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestGateHoldsTheCommandUntilItReturns: with Spec.Gate (terminald's audit
// intent, fsync'd while the sandbox starts the command) the command does
// nothing before the gate returns, and a gate that fails ends it before its
// first instruction: Run returns the gate's error and the command's one
// act (creating a file) never happens. In every isolation, and with
// Landlock off (no helper).
func TestGateHoldsTheCommandUntilItReturns(t *testing.T) {
	for _, c := range []struct {
		name string
		iso  Isolation
		mode Mode
	}{{"namespaces", IsolationNamespaces, ModeRequired}, {"landlock", IsolationLandlock, ModeRequired}, {"off", IsolationNamespaces, ModeOff}} {
		t.Run(c.name, func(t *testing.T) {
			b := newBox(t)
			// (landlock isolation as root runs the command as root without
			// capabilities: the jail must be writable to it.)
			if err := os.Chmod(b.jail, 0o777); err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(b.jail, "ran")
			s := b.spec(t, "sh", "-c", "echo > ran")
			s.Isolation, s.Landlock = c.iso, c.mode
			var returned time.Time
			s.Gate = func() error {
				time.Sleep(150 * time.Millisecond)
				if _, err := os.Stat(mark); err == nil {
					t.Error("the command ran before its gate returned")
				}
				returned = time.Now()
				return nil
			}
			out, err := Run(context.Background(), s)
			if err != nil || out.ExitCode != 0 {
				t.Fatalf("run: %v %+v\n%s", err, out, b.stderr.String())
			}
			fi, err := os.Stat(mark)
			if err != nil {
				t.Fatal("the command did not run after its gate returned")
			}
			// (file times come from a coarse clock: up to a tick behind.)
			if fi.ModTime().Before(returned.Add(-50 * time.Millisecond)) {
				t.Fatalf("the file was made at %v, before the gate returned at %v", fi.ModTime(), returned)
			}
			os.Remove(mark)

			refused := result.New(result.AuditUnavailable, "the intent could not be made durable")
			s.Gate = func() error { return refused }
			out, err = Run(context.Background(), s)
			if !errors.Is(err, refused) && result.CodeOf(err) != result.AuditUnavailable {
				t.Fatalf("a failed gate: Run returned %v, want the gate's error", err)
			}
			if out.Duration != 0 {
				t.Errorf("a failed gate: the outcome says the command ran (%v)", out.Duration)
			}
			time.Sleep(100 * time.Millisecond)
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the command ran although its gate failed")
			}
			// The sandbox serves the next command.
			s.Gate = nil
			if out, err := Run(context.Background(), s); err != nil || out.ExitCode != 0 {
				t.Fatalf("the run after a failed gate: %v %+v", err, out)
			}
		})
	}
}
