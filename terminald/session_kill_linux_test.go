package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// TestBinaryKilledWithLiveSessionsLeavesNothing: a server with three live
// sessions (one with a setsid and a double-forked descendant, one a dev
// server whose port is published) is killed with SIGKILL: no process of
// any session survives, the published port is closed, and the next
// server removes the dead one's run directory; as root and as an
// unprivileged server.
func TestBinaryKilledWithLiveSessionsLeavesNothing(t *testing.T) {
	for _, unpriv := range []bool{false, true} {
		name := "root"
		if unpriv {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) { killWithSessions(t, unpriv) })
	}
}

// sessionServer starts the binary over stdio (as root, or through a
// setpriv wrapper as nobody) in the sandbox profile with sh and python3
// allowed, four concurrent slots and published ports, on a fresh jail.
// It returns the client, the server process, the policy file, the
// environment, the jail and the state directory.
type sessionServer struct {
	c           *client.Client
	cmd         *exec.Cmd
	bin, pol    string
	env         []string
	base, state string
}

func startSessionServer(t *testing.T, unpriv bool) *sessionServer {
	base, err := os.MkdirTemp("", "bastion-sessions-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	server := bin
	for _, d := range []string{"bin", "jail", "home", "state"} {
		p := filepath.Join(base, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if unpriv && d != "bin" {
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
	}
	if unpriv {
		real := filepath.Join(base, "bin", "terminald.real")
		copyFile(t, bin, real, 0o755)
		server = filepath.Join(base, "bin", "terminald")
		script := "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups " + real + " \"$@\"\n"
		if err := os.WriteFile(server, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(base, "state", "t")
	pol := filepath.Join(base, "policy.toml")
	doc := fmt.Sprintf("audit_log = %q\n[terminal]\nprofile = \"sandbox\"\njail_root = %q\n[terminal.limits]\nmax_concurrent = 4\n"+
		"[terminal.sessions]\npublish_ports = true\n"+
		"[terminal.state]\ndir = %q\n[terminal.allowlist]\ncommands = [\"sh\", \"python3\"]\n",
		filepath.Join(base, "state", "audit.jsonl"), filepath.Join(base, "jail"), state)
	if err := os.WriteFile(pol, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(base, "home"), "XDG_STATE_HOME=" + filepath.Join(base, "state")}
	c, cmd := mcpkittest.StartStdio(t, server, env, "--config", pol, "--log-level", "warn")
	return &sessionServer{c: c, cmd: cmd, bin: server, pol: pol, env: env, base: base, state: state}
}

func killWithSessions(t *testing.T, unpriv bool) {
	ss := startSessionServer(t, unpriv)
	c, cmd, base, state, server, env, pol := ss.c, ss.cmd, ss.base, ss.state, ss.bin, ss.env, ss.pol
	tok := fmt.Sprintf("bastion-sessions-killed-%d", time.Now().UnixNano())
	lines := []string{
		fmt.Sprintf(`sh -c "setsid sh -c 'sleep 300; : %[1]s' & (sh -c 'sleep 300; : %[1]s' &); sleep 300; : %[1]s"`, tok),
		fmt.Sprintf(`sh -c "sleep 300; : %s"`, tok),
		fmt.Sprintf(`python3 -m http.server 8000 --bind 127.0.0.1 --directory %s`, tok),
	}
	if err := os.Mkdir(filepath.Join(base, "jail", tok), 0o755); err != nil {
		t.Fatal(err)
	}
	if unpriv {
		if err := os.Chown(filepath.Join(base, "jail", tok), nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range lines {
		r := call(t, c, "run_command", map[string]any{"command": l, "background": true})
		if r.Code != "OK" {
			t.Fatalf("starting %q: %+v", l, r)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(mcpkittest.Carrying(tok)) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the sessions' processes never all ran: %v", mcpkittest.Carrying(tok))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The dev server's port is published on the host.
	var url string
	for url == "" {
		l := call(t, c, "list_sessions", map[string]any{})
		ss, _ := l.Detail["sessions"].([]any)
		for _, x := range ss {
			ports, _ := x.(map[string]any)["ports"].([]any)
			for _, p := range ports {
				url, _ = p.(map[string]any)["url"].(string)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev server's port was never published: %v", l.Detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second); err != nil {
		t.Fatalf("the published port %s does not answer: %v", url, err)
	} else {
		conn.Close()
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	waitGone(t, tok)
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		conn.Close()
		t.Fatalf("the published port %s is still open after the server was killed", url)
	}
	runs := filepath.Join(state, "runs")
	dead, _ := os.ReadDir(runs)
	if len(dead) != 1 {
		t.Fatalf("the killed server should have left its run directory behind, found %v", dead)
	}
	c2, _ := mcpkittest.StartStdio(t, server, env, "--config", pol, "--log-level", "warn")
	if r := call(t, c2, "list_sessions", map[string]any{}); r.Code != "OK" || r.Detail["running"] != float64(0) {
		t.Fatalf("the next server: %+v", r)
	}
	if r := call(t, c2, "run_command", map[string]any{"command": "sh -c 'echo next'"}); r.Code != "OK" {
		t.Fatalf("the next server: %+v", r)
	}
	for _, d := range dead {
		if _, err := os.Stat(filepath.Join(runs, d.Name())); !os.IsNotExist(err) {
			t.Errorf("the dead server's run directory %s is still there after the next start", d.Name())
		}
	}
}

// TestClientDisconnectEndsItsSessions: when the stdio client goes (its
// end of the pipe closes), the server ends and every session with it, as
// root and as an unprivileged server.
func TestClientDisconnectEndsItsSessions(t *testing.T) {
	for _, unpriv := range []bool{false, true} {
		name := "root"
		if unpriv {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) {
			ss := startSessionServer(t, unpriv)
			tok := fmt.Sprintf("bastion-disconnect-%d", time.Now().UnixNano())
			line := fmt.Sprintf(`sh -c "setsid sh -c 'sleep 300; : %[1]s' & sleep 300; : %[1]s"`, tok)
			if r := call(t, ss.c, "run_command", map[string]any{"command": line, "background": true}); r.Code != "OK" {
				t.Fatalf("start: %+v", r)
			}
			for deadline := time.Now().Add(20 * time.Second); len(mcpkittest.Carrying(tok)) < 2; {
				if time.Now().After(deadline) {
					t.Fatal("the session's processes never ran")
				}
				time.Sleep(10 * time.Millisecond)
			}
			ss.c.Close()
			done := make(chan error, 1)
			go func() { done <- ss.cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the server did not end when its client went")
			}
			waitGone(t, tok)
		})
	}
}
