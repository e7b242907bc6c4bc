package terminal

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/runner/runnertest"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// lastOutcome is the fields of the newest outcome record in the audit log.
func lastOutcome(t *testing.T, e *env) map[string]any {
	t.Helper()
	recs := e.AuditRecords(t)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i]["kind"] == "outcome" {
			f, _ := recs[i]["fields"].(map[string]any)
			return f
		}
	}
	t.Fatal("no outcome record in the audit log")
	return nil
}

// refusalsIn returns detail.sandbox_refused (or the outcome record's
// sandbox_refused) as kind=what strings.
func refusalsIn(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		m, _ := x.(map[string]any)
		out = append(out, m["kind"].(string)+"="+m["what"].(string))
	}
	return out
}

// wantRefused checks that the run's answer and its outcome record both
// list exactly want (kind=what), and that the reason names key when want
// is not empty.
func wantRefused(t *testing.T, e *env, r res, key string, want ...string) {
	t.Helper()
	got := refusalsIn(r.Detail["sandbox_refused"])
	audited := refusalsIn(lastOutcome(t, e)["sandbox_refused"])
	if strings.Join(got, " ") != strings.Join(want, " ") || strings.Join(audited, " ") != strings.Join(want, " ") {
		t.Fatalf("sandbox_refused: detail %v, audit %v, want %v (reason %q)", got, audited, want, r.Reason)
	}
	if len(want) > 0 && (!strings.Contains(r.Reason, "the sandbox refused during this run") || !strings.Contains(r.Reason, key)) {
		t.Fatalf("reason %q does not say the sandbox refused, or does not name %s", r.Reason, key)
	}
	if len(want) == 0 && strings.Contains(r.Reason, "sandbox refused") {
		t.Fatalf("reason %q reports a refusal that did not happen", r.Reason)
	}
}

// TestDeniedNetworkLookupIsReportedAsTheSandboxsRefusal: with the network
// denied, a command that looks a host name up fails at once (the view's
// resolver answers "refused"), and its answer and outcome record name the
// host and the network key; a command that looked nothing up, run
// before and after it, reports nothing.
func TestDeniedNetworkLookupIsReportedAsTheSandboxsRefusal(t *testing.T) {
	e := shEnv(t)
	wantRefused(t, e, e.run(t, `sh -c 'getent hosts localhost; getent ahosts sub.localhost; echo quiet'`), "")
	r := e.run(t, `sh -c 'getent hosts registry.example.test'`)
	if r.Code != "OK" || r.exit() == 0 {
		t.Fatalf("lookup: %s exit %d %s", r.Code, r.exit(), r.text)
	}
	wantRefused(t, e, r, `[terminal.sandbox] network = "deny"`, "dns_lookup=registry.example.test")
	t.Logf("lookup: %s", r.Reason)
	wantRefused(t, e, e.run(t, `sh -c 'echo quiet'`), "")
}

// TestProgramOutsideTheViewIsReportedAsTheSandboxsRefusal: an allowlisted
// program that resolves on the PATH to a directory outside the read paths
// cannot be found in the command's view; run directly (the start fails)
// or from a script (the shell says "not found"), the answer and the
// outcome record name its host path and read_paths. A script that fails
// on a program that exists nowhere reports nothing.
func TestProgramOutsideTheViewIsReportedAsTheSandboxsRefusal(t *testing.T) {
	bin := runnertest.Canon(t, t.TempDir())
	tool := filepath.Join(bin, "mytool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := shEnv(t, func(o *Options) {
		o.Policy.Allow = append(o.Policy.Allow, "mytool")
		o.Path = []string{bin, "/usr/bin", "/bin"}
	})
	r := e.run(t, "mytool")
	wantRefused(t, e, r, "[terminal.sandbox] read_paths", "not_in_view="+tool)
	t.Logf("direct: %s: %s", r.Code, r.Reason)
	r = e.run(t, `sh -c mytool`)
	if r.exit() == 0 {
		t.Fatalf("mytool ran in the view: %s", r.text)
	}
	wantRefused(t, e, r, "[terminal.sandbox] read_paths", "not_in_view="+tool)
	wantRefused(t, e, e.run(t, `sh -c nosuchtool`), "")
}

// TestProxyRefusalIsReportedToTheRunThatAsked: with network = "proxy",
// a command whose request the proxy refuses gets the refused host in its
// answer and outcome record (the proxy names the run by its helper's
// process id), and a name it looked up directly too; a command run after
// it that only reaches an allowed host reports nothing.
func TestProxyRefusalIsReportedToTheRunThatAsked(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			// Answer only once the request is in: a response written before
			// it reaches the proxy's HTTP client as an unsolicited one on
			// an idle connection, which it drops (a 502 to the command).
			if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
			}
			c.Close()
		}
	}()
	var srv *Server
	p, err := proxy.New(proxy.Options{AllowedHosts: []string{"allowed.test"},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", up.Addr().String())
		},
		OnRefuse: func(r proxy.Refusal) { srv.NoteProxyRefusal(r) }})
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	e := shEnv(t, func(o *Options) {
		o.Policy.Allow = append(o.Policy.Allow, "python3")
		o.Net, o.ProxySocket = sandbox.NetProxy, sock
	})
	srv = e.srv
	fetch := `python3 -c 'exec("import sys, urllib.request, socket\nfor u in sys.argv[1:]:\n try: print(urllib.request.urlopen(u, timeout=10).read().decode())\n ` +
		`except Exception as e: print(\"ERR\", e)\ntry: socket.getaddrinfo(\"direct.example.test\", 443)\nexcept Exception as e: print(\"ERR\", e)")' `
	r := e.run(t, fetch+"http://allowed.test/ http://evil.test/")
	if !strings.Contains(r.str("stdout"), "ok") || !strings.Contains(r.str("stdout"), "403") {
		t.Fatalf("fetches: %s", r.text)
	}
	wantRefused(t, e, r, "[terminal.sandbox] allowed_hosts", "dns_lookup=direct.example.test", "proxy=evil.test:80")
	r = e.run(t, `python3 -c "import urllib.request; print(urllib.request.urlopen('http://allowed.test/', timeout=10).read().decode())"`)
	if r.str("stdout") != "ok\n" {
		t.Fatalf("allowed fetch: %s", r.text)
	}
	wantRefused(t, e, r, "")
}
