package sandbox

import (
	"context"
	"fmt"
	"github.com/bastion-mcp/bastion/safety/testfs"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStdinPipeReachesOnlyTheCommand: a session's input (Spec.Stdin, a
// pipe the server writes) reaches the command as descriptor 0 through the
// helper, in both isolations, and the end of input ends a command that
// reads to EOF; the command holds no other descriptor of the server's.
func TestStdinPipeReachesOnlyTheCommand(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			s := b.spec(t, "sh", "-c", "while read l; do echo got:$l; done; ls -l /proc/self/fd/ 2>/dev/null; true")
			s.Isolation, s.Stdin = iso, r
			started := make(chan struct{})
			s.Started = func() { close(started) }
			done := make(chan Outcome, 1)
			go func() {
				out, _ := Run(context.Background(), s)
				done <- out
			}()
			<-started
			if _, err := w.WriteString("one\n"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if _, err := w.WriteString("two\n"); err != nil {
				t.Fatal(err)
			}
			w.Close()
			out := <-done
			lines := strings.Fields(b.stdout.String())
			if out.ExitCode != 0 || len(lines) < 2 || lines[0] != "got:one" || lines[1] != "got:two" {
				t.Fatalf("%s: outcome %+v stdout %q stderr %q", iso, out, b.stdout.String(), b.stderr.String())
			}
			// The input pipe is the command's descriptor 0 and no other
			// (landlock isolation cannot list /proc/self/fd at all).
			var st unix.Stat_t
			if err := unix.Fstat(int(r.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			pipe := fmt.Sprintf("pipe:[%d]", st.Ino)
			n := strings.Count(b.stdout.String(), pipe)
			if iso == IsolationNamespaces && (n != 1 || !strings.Contains(b.stdout.String(), " 0 -> "+pipe)) {
				t.Fatalf("%s: the input pipe is open %d times in the command, want once as fd 0:\n%s", iso, n, b.stdout.String())
			}
		})
	}
}

// TestStdinReaderIsCopied: a reader that is not a file is copied into the
// command's input.
func TestStdinReaderIsCopied(t *testing.T) {
	b := newBox(t)
	s := b.spec(t, "cat")
	s.Stdin = strings.NewReader("from a reader\n")
	out := b.run(t, s)
	if out.ExitCode != 0 || b.stdout.String() != "from a reader\n" {
		t.Fatalf("outcome %+v stdout %q", out, b.stdout.String())
	}
}

// TestTerminateSignalsEveryProcessThenCancelKills: a session's stop is
// SIGTERM to every process of the command (a trap sees it), and a command
// that ignores it is killed by the cancellation that follows; nothing it
// started survives, in both isolations.
func TestTerminateSignalsEveryProcessThenCancelKills(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			tok := token(t)
			s := b.spec(t, "sh", "-c", "trap 'echo term-seen; exit 7' TERM; "+detached(tok)+"while :; do sleep 0.05; done")
			s.Isolation, s.Timeout = iso, 0
			term := make(chan struct{})
			started := make(chan struct{})
			s.Terminate, s.Started = term, func() { close(started) }
			done := make(chan Outcome, 1)
			go func() {
				out, _ := Run(context.Background(), s)
				done <- out
			}()
			<-started
			time.Sleep(300 * time.Millisecond) // the trap is set
			close(term)
			select {
			case out := <-done:
				if out.ExitCode != 7 || !strings.Contains(b.stdout.String(), "term-seen") {
					t.Fatalf("%s: outcome %+v stdout %q", iso, out, b.stdout.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: the command did not end on SIGTERM", iso)
			}
			if p := survivors(tok); len(p) > 0 {
				t.Fatalf("%s: processes %v survived", iso, p)
			}

			// A command that ignores SIGTERM: the cancel kills it.
			b2 := newBox(t)
			s2 := b2.spec(t, "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
			s2.Isolation, s2.Timeout = iso, 0
			term2 := make(chan struct{})
			s2.Terminate = term2
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done2 := make(chan error, 1)
			go func() {
				_, err := Run(ctx, s2)
				done2 <- err
			}()
			for !strings.Contains(b2.stdout.String(), "ready") {
				time.Sleep(10 * time.Millisecond)
			}
			close(term2)
			time.Sleep(200 * time.Millisecond)
			cancel()
			select {
			case <-done2:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: the cancel did not end a command that ignores SIGTERM", iso)
			}
		})
	}
}

// TestTTYIsTheCommandsTerminal: with Spec.TTY the pseudo-terminal is the
// command's stdin, stdout, stderr and controlling terminal, in both
// isolations; what it prints comes out of the primary side.
func TestTTYIsTheCommandsTerminal(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			p, sec, err := OpenPTY()
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s := b.spec(t, "sh", "-c", `test -t 0 && test -t 1 && test -t 2 && echo all-terminal; read l; echo got:$l`)
			s.Isolation, s.Stdin, s.TTY = iso, sec, true
			var out testfs.SyncBuffer
			copied := make(chan struct{})
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := p.Read(buf)
					out.Write(buf[:n])
					if err != nil {
						close(copied)
						return
					}
				}
			}()
			done := make(chan Outcome, 1)
			go func() {
				o, _ := Run(context.Background(), s)
				done <- o
			}()
			if _, err := p.WriteString("hello\n"); err != nil {
				t.Fatal(err)
			}
			o := <-done
			sec.Close()
			select {
			case <-copied:
			case <-time.After(5 * time.Second):
				t.Fatal("the terminal's output never ended")
			}
			if o.ExitCode != 0 || !strings.Contains(out.String(), "all-terminal") || !strings.Contains(out.String(), "got:hello") {
				t.Fatalf("%s: outcome %+v, terminal %q, stdout %q", iso, o, out.String(), b.stdout.String())
			}
		})
	}
}

// TestAttackDescriptorInheritedByTheServerDoesNotReachTheCommand: a
// descriptor the server inherited without close-on-exec (its own parent
// leaked it) is not the command's, in both isolations.
func TestAttackDescriptorInheritedByTheServerDoesNotReachTheCommand(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A leaked descriptor: a copy without close-on-exec.
	leaked, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leaked)
	var st unix.Stat_t
	if err := unix.Fstat(leaked, &st); err != nil {
		t.Fatal(err)
	}
	pipe := fmt.Sprintf("pipe:[%d]", st.Ino)
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			s := b.spec(t, "sh", "-c", fmt.Sprintf("echo leaked >&%d && echo wrote; ls -l /proc/self/fd/ 2>/dev/null; true", leaked))
			s.Isolation = iso
			out := b.run(t, s)
			if strings.Contains(b.stdout.String(), "wrote") || strings.Contains(b.stdout.String(), pipe) {
				t.Fatalf("%s: the command holds the server's inherited descriptor %d (exit %d):\n%s", iso, leaked, out.ExitCode, b.stdout.String())
			}
		})
	}
}
