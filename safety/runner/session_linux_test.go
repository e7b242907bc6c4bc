package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// sessionFixture is a sandbox-profile runner (sh and python3 allowed) with
// isolation iso, room for the sessions of a test, and opts applied.
func sessionFixture(t *testing.T, iso sandbox.Isolation, opts ...func(*Options)) *fixture {
	t.Helper()
	return newFixture(t, append([]func(*Options){func(o *Options) {
		o.Policy = command.Policy{Sandboxed: true, Allow: []string{"sh", "python3"}}
		o.Sandboxed = true
		o.Isolation = iso
		o.Path = []string{"/usr/local/bin", "/usr/bin", "/bin"}
		o.MaxConcurrent = 8
	}}, opts...)...)
}

// start starts line as a session and requires it to run.
func (f *fixture) start(t *testing.T, line string) SessionOutput {
	t.Helper()
	out, so := f.r.StartSession(context.Background(), SessionRequest{Request: Request{Line: line}})
	if !out.Ran || out.Code != result.OK || so.Session.ID == "" {
		t.Fatalf("StartSession(%q): ran=%v %s (%s)", line, out.Ran, out.Code, out.Reason)
	}
	return so
}

// readUntil reads a session until its output contains want, or its state
// is want when want is a state; it fails after a generous bound.
func (f *fixture) readUntil(t *testing.T, id string, want func(SessionOutput, string) bool) (SessionOutput, string) {
	t.Helper()
	var all strings.Builder
	var cursor int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		so, err := f.r.ReadSession(context.Background(), id, cursor, 500*time.Millisecond, "")
		if err != nil {
			t.Fatalf("ReadSession: %v", err)
		}
		all.WriteString(so.Output)
		cursor = so.Cursor
		if want(so, all.String()) {
			return so, all.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: never got there; state %s, output %q", id, so.Session.State, all.String())
		}
	}
}

func contains(s string) func(SessionOutput, string) bool {
	return func(_ SessionOutput, all string) bool { return strings.Contains(all, s) }
}

func ended(so SessionOutput, _ string) bool { return so.Session.Ended != nil }

// TestSessionPythonREPLAnswersInputAndEndsOnEOF: a Python REPL on a pipe
// takes `1+1`, prints 2, and ends with status 0 at the end of its input,
// in both isolations.
func TestSessionPythonREPLAnswersInputAndEndsOnEOF(t *testing.T) {
	for _, iso := range isolations() {
		t.Run(string(iso), func(t *testing.T) {
			f := sessionFixture(t, iso)
			so := f.start(t, "python3 -i -u -q")
			if so.Session.State != SessionRunning && so.Session.State != SessionExited {
				t.Fatalf("state %q after start", so.Session.State)
			}
			id := so.Session.ID
			if _, err := f.r.SendInput(id, "1+1\n", false); err != nil {
				t.Fatal(err)
			}
			f.readUntil(t, id, contains("2\n"))
			if _, err := f.r.SendInput(id, "", true); err != nil {
				t.Fatal(err)
			}
			so, _ = f.readUntil(t, id, ended)
			if so.Session.State != SessionExited || so.Session.ExitCode == nil || *so.Session.ExitCode != 0 {
				t.Fatalf("after EOF: %+v", so.Session)
			}
			if _, err := f.r.SendInput(id, "2+2\n", false); result.CodeOf(err) != result.OperationFailed {
				t.Fatalf("input to an ended session: %v", err)
			}
			var inputs, outcomes int
			for _, rec := range f.AuditRecords(t) {
				if rec["action"] == "session.input" {
					inputs++
				}
				if rec["action"] == "session" && rec["kind"] == "outcome" {
					outcomes++
					fields, _ := rec["fields"].(map[string]any)
					if fields["output_digest"] == nil || fields["output_bytes"] == nil {
						t.Fatalf("the end record lacks bytes or digest: %v", rec)
					}
				}
			}
			if inputs != 2 || outcomes != 1 {
				t.Fatalf("audit: %d input events, %d end records; want 2 and 1", inputs, outcomes)
			}
		})
	}
}

// hostProcs returns the host pids whose command line contains needle.
func hostProcs(needle string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cl, []byte(needle)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && (st[i+2] == 'Z' || st[i+2] == 'X') {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// noProcs requires that no host process carries needle, within 3 s.
func noProcs(t *testing.T, needle string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		p := hostProcs(needle)
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v carrying %q survived", p, needle)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionDevServerStoppedLeavesNothing: `python3 -m http.server`
// serving on the session's own loopback is stopped; nothing survives.
// (Landlock isolation with the network denied refuses every socket, so
// this is the namespaces isolation's test.)
func TestSessionDevServerStoppedLeavesNothing(t *testing.T) {
	f := sessionFixture(t, sandbox.IsolationNamespaces)
	port := strconv.Itoa(20000 + rand.IntN(30000))
	so := f.start(t, "python3 -u -m http.server "+port+" --bind 127.0.0.1")
	f.readUntil(t, so.Session.ID, contains("Serving HTTP"))
	if len(hostProcs("http.server\x00"+port)) == 0 {
		t.Fatal("the server's process is not to be seen on the host")
	}
	stopped, err := f.r.StopSession(context.Background(), so.Session.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Session.State != SessionStopped || stopped.Session.Ended == nil {
		t.Fatalf("after stop: %+v", stopped.Session)
	}
	noProcs(t, "http.server\x00"+port)
}

// TestSessionDevServerPublishedOnHostLoopbackOnly: with publish_ports,
// `python3 -m http.server` in a session is fetched from the host through
// the URL its listing gives (127.0.0.1 only); each publication is
// audited; once stopped, the port is closed and nothing survives.
func TestSessionDevServerPublishedOnHostLoopbackOnly(t *testing.T) {
	f := sessionFixture(t, sandbox.IsolationNamespaces, func(o *Options) { o.PublishPorts = true })
	if err := os.WriteFile(f.Jail+"/index.html", []byte("served-from-the-jail"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(20000 + rand.IntN(30000))
	so := f.start(t, "python3 -u -m http.server "+port+" --bind 127.0.0.1")
	var url string
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		for _, p := range f.r.Sessions()[0].Ports {
			if strconv.Itoa(p.Inside) == port {
				url = p.URL
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the port was never published: %+v", f.r.Sessions()[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("published at %q, want the host's loopback", url)
	}
	resp, err := http.Get(url + "/index.html")
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "served-from-the-jail" {
		t.Fatalf("GET %s: %q", url, body)
	}
	var published int
	for _, rec := range f.AuditRecords(t) {
		if rec["action"] == "session.publish" {
			published++
		}
	}
	if published != 1 {
		t.Fatalf("%d publication events, want 1", published)
	}
	stopped, err := f.r.StopSession(context.Background(), so.Session.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stopped.Session.Ports) != 0 {
		t.Fatalf("ports still listed after the stop: %+v", stopped.Session.Ports)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the stop", url)
	}
	noProcs(t, "http.server\x00"+port)
}

// TestSessionIdleAndLifetimeExpiry: a silent session ends at its idle
// bound; a busy one at its lifetime; both with every process.
func TestSessionIdleAndLifetimeExpiry(t *testing.T) {
	tok := fmt.Sprintf("bastion-expiry-%d", time.Now().UnixNano())
	f := sessionFixture(t, sandbox.IsolationNamespaces, func(o *Options) {
		o.SessionIdle, o.SessionLifetime = time.Second, time.Hour
	})
	so := f.start(t, "sh -c 'sleep 60; : "+tok+"'")
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := f.r.Sessions()[0]
		if info.State == SessionExpired {
			if info.Limit != LimitIdle {
				t.Fatalf("idle session ended with %+v", info)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session did not expire: %+v", info)
		}
		time.Sleep(100 * time.Millisecond)
	}
	noProcs(t, tok)
	_ = so

	g := sessionFixture(t, sandbox.IsolationLandlock, func(o *Options) {
		o.SessionIdle, o.SessionLifetime = time.Hour, 1500*time.Millisecond
	})
	so = g.start(t, "sh -c 'while :; do echo tick; sleep 0.2; done; : "+tok+"'")
	got, _ := g.readUntil(t, so.Session.ID, ended)
	if got.Session.State != SessionExpired || got.Session.Limit != LimitLifetime {
		t.Fatalf("busy session ended with %+v", got.Session)
	}
	noProcs(t, tok)
}

// TestSessionsBeyondMaxAreRefusedAndRunNothing: with max sessions alive a
// start is refused with LIMIT_EXCEEDED and limit "sessions", recorded as a
// refusal, and nothing runs; once one is stopped a start works again.
func TestSessionsBeyondMaxAreRefusedAndRunNothing(t *testing.T) {
	f := sessionFixture(t, sandbox.IsolationNamespaces, func(o *Options) { o.SessionsMax = 2 })
	a := f.start(t, "sh -c 'sleep 60'")
	f.start(t, "sh -c 'sleep 60'")
	out, so := f.r.StartSession(context.Background(), SessionRequest{Request: Request{Line: "sh -c 'touch ran.txt'"}})
	if out.Ran || out.Code != result.LimitExceeded || out.Limit != LimitSessions || so.Session.ID != "" {
		t.Fatalf("third session: ran=%v %s limit %q (%s)", out.Ran, out.Code, out.Limit, out.Reason)
	}
	if !strings.Contains(out.Reason, "[terminal.sessions] max") {
		t.Fatalf("the refusal does not say what to do: %s", out.Reason)
	}
	if testfs.Exists(f.Jail + "/ran.txt") {
		t.Fatal("the refused session ran")
	}
	if _, err := f.r.StopSession(context.Background(), a.Session.ID, 0); err != nil {
		t.Fatal(err)
	}
	f.start(t, "sh -c 'sleep 60'")
}

// fdCount counts this process's open descriptors.
func fdCount() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// TestFiftySessionsLeaveNothingBehind: 50 sessions started and stopped in
// a loop leave no process, descriptor, goroutine or run directory.
func TestFiftySessionsLeaveNothingBehind(t *testing.T) {
	tok := fmt.Sprintf("bastion-fifty-%d", time.Now().UnixNano())
	f := sessionFixture(t, sandbox.IsolationNamespaces)
	// One session first, so that pools and once-only goroutines exist.
	first := f.start(t, "sh -c 'echo warm; sleep 30; : "+tok+"'")
	if _, err := f.r.StopSession(context.Background(), first.Session.ID, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fds, gs := fdCount(), runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		so := f.start(t, "sh -c 'echo hi; sleep 30; : "+tok+"'")
		if _, err := f.r.StopSession(context.Background(), so.Session.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	noProcs(t, tok)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Prepared helpers (at most the sandbox's four) and pooled pairs
		// come and go with the recycling; allow for them.
		dfd, dg := fdCount()-fds, runtime.NumGoroutine()-gs
		if dfd <= 8 && dg <= 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 50 sessions: %d more descriptors, %d more goroutines", dfd, dg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(f.r.Sessions()); n > keepEnded {
		t.Fatalf("%d sessions listed, want at most %d ended ones", n, keepEnded)
	}
	runs := f.r.runsDir
	f.r.Close()
	if testfs.Exists(runs) {
		ents, _ := os.ReadDir(runs)
		t.Fatalf("the runs directory is left with %d entries", len(ents))
	}
}

// TestSessionSecretSplitAcrossWritesIsRedacted: a key id printed in two
// writes 100 ms apart, read while the command runs, never shows in part.
func TestSessionSecretSplitAcrossWritesIsRedacted(t *testing.T) {
	f := sessionFixture(t, sandbox.IsolationNamespaces)
	head, tail := "AKIA"+"EXAMP", "LEKEY234567"
	so := f.start(t, `sh -c 'printf "key id `+head+`"; sleep 0.1; printf "`+tail+` in use\n"; sleep 30'`)
	_, all := f.readUntil(t, so.Session.ID, contains("in use"))
	if strings.Contains(all, head) || strings.Contains(all, tail) || !strings.Contains(all, "[REDACTED:") {
		t.Fatalf("the split secret was not redacted: %q", all)
	}
}

// TestSessionInputIsAuditedRedacted: a secret sent as input is redacted in
// the audit record of the input.
func TestSessionInputIsAuditedRedacted(t *testing.T) {
	f := sessionFixture(t, sandbox.IsolationNamespaces)
	so := f.start(t, "sh -c 'cat >/dev/null'")
	secret := "AKIA" + "EXAMPLEKEY234567"
	if _, err := f.r.SendInput(so.Session.ID, "export K="+secret+"\n", true); err != nil {
		t.Fatal(err)
	}
	f.readUntil(t, so.Session.ID, ended)
	b, err := os.ReadFile(f.AuditPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) || !bytes.Contains(b, []byte("session.input")) {
		t.Fatal("the input's secret reached the audit log, or the input was not recorded")
	}
}

// TestSessionsHoldUnprivileged runs the session tests again with the
// server as an unprivileged user.
func TestSessionsHoldUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestSessionPythonREPLAnswersInputAndEndsOnEOF|TestSessionDevServerStoppedLeavesNothing|"+
		"TestSessionIdleAndLifetimeExpiry|TestSessionsBeyondMaxAreRefusedAndRunNothing|TestFiftySessionsLeaveNothingBehind|"+
		"TestSessionSecretSplitAcrossWritesIsRedacted|TestSessionInputIsAuditedRedacted|TestSessionAskDecisionWithoutAPersonRunsNothing|TestSessionPythonREPLOnATerminal|TestSessionDevServerPublishedOnHostLoopbackOnly)$", examplePolicy)
}

// TestSessionAskDecisionWithoutAPersonRunsNothing: a session whose line
// the policy asks about is refused like run_command when no person can be
// asked (NEEDS_EXPLICIT_REQUEST), and nothing starts.
func TestSessionAskDecisionWithoutAPersonRunsNothing(t *testing.T) {
	f := sessionFixture(t, sandbox.IsolationNamespaces, func(o *Options) {
		o.Policy.Ask = []string{"python3"}
	})
	out, so := f.r.StartSession(context.Background(), SessionRequest{Request: Request{Line: "python3 -c 'open(\"ran.txt\",\"w\")'"}})
	if out.Ran || out.Code != result.NeedsExplicitRequest || so.Session.ID != "" || len(f.r.Sessions()) != 0 {
		t.Fatalf("ask decision: ran=%v %s (%s)", out.Ran, out.Code, out.Reason)
	}
	if testfs.Exists(f.Jail + "/ran.txt") {
		t.Fatal("the session ran without approval")
	}
}

// TestSessionPythonREPLOnATerminal: with tty the REPL runs on a
// pseudo-terminal (it sees one), takes 1+1, prints 2, and ends with
// status 0 at the terminal's end of input, in both isolations.
func TestSessionPythonREPLOnATerminal(t *testing.T) {
	for _, iso := range isolations() {
		t.Run(string(iso), func(t *testing.T) {
			f := sessionFixture(t, iso)
			out, so := f.r.StartSession(context.Background(), SessionRequest{TTY: true,
				Request: Request{Line: "python3 -q -c 'import sys,code; print(\"tty\", sys.stdin.isatty()); code.interact(banner=\"\", exitmsg=\"\")'"}})
			if !out.Ran || so.Session.ID == "" {
				t.Fatalf("start: %s (%s)", out.Code, out.Reason)
			}
			id := so.Session.ID
			// Each input waits for the prompt: input typed ahead of a
			// readline prompt can lose a terminal's end of input.
			f.readUntil(t, id, contains("tty True\n>>> "))
			if _, err := f.r.SendInput(id, "1+1\n", false); err != nil {
				t.Fatal(err)
			}
			f.readUntil(t, id, contains("\n2\n>>> "))
			if _, err := f.r.SendInput(id, "", true); err != nil {
				t.Fatal(err)
			}
			got, all := f.readUntil(t, id, ended)
			if got.Session.State != SessionExited || got.Session.ExitCode == nil || *got.Session.ExitCode != 0 {
				t.Fatalf("after EOF: %+v, output %q", got.Session, all)
			}
		})
	}
}
