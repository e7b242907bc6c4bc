package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBinaryProxyRefusalIsAudited runs the real binary with network =
// "proxy" and one allowed host, and has an allowed interpreter ask for
// another host through the proxy variables terminald sets: the command
// runs, urllib raises HTTPError 403 whose body names the refused host, and
// the audit log holds a proxy.refused event for that host. The answer and
// the audited reason show a refusal of policy, made before any lookup: a
// lookup of the reserved name evil.test could only have failed (502 "found
// no address", or 504), and a name resolved to a non-public address is
// refused with another reason ("resolves to"). (The test does not watch
// the server's DNS traffic itself.) A direct connection that
// bypasses the proxy, to a listener the test opens on the host's loopback,
// fails, and the listener sees no connection.
func TestBinaryProxyRefusalIsAudited(t *testing.T) {
	// The host listener a direct connection would reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	jail := t.TempDir()
	pol := policy(t, jail, "profile = \"sandbox\"\n"+
		"[terminal.sandbox]\nnetwork = \"proxy\"\nallowed_hosts = [\"example.com\"]\n"+
		"[terminal.allowlist]\ncommands = [\"python3\"]\n")
	c := startStdio(t, pol)

	// urllib finds the proxy in the environment terminald set; the
	// exception hook prints what urllib raised, with the body of the answer.
	fetch := `python3 -c "import sys, urllib.request; ` +
		`sys.excepthook = lambda t, v, tb: print('RAISED', t.__name__, getattr(v, 'code', None), getattr(v, 'url', None), v.read().decode() if hasattr(v, 'read') else v); ` +
		`urllib.request.urlopen('http://evil.test/', timeout=20); print('NO-ERROR')"`
	r := call(t, c, "run_command", map[string]any{"command": fetch})
	stdout, _ := r.Detail["stdout"].(string)
	stderr, _ := r.Detail["stderr"].(string)
	if r.Code != "OK" || r.Detail["exit_code"] == float64(0) {
		t.Fatalf("the fetch did not run, or succeeded: code %s, reason %q, detail %v", r.Code, r.Reason, r.Detail)
	}
	if conf, _ := r.Detail["confinement"].(string); !strings.HasPrefix(conf, "namespaces(") {
		t.Fatalf("confinement %q, want namespaces", conf)
	}
	if !strings.Contains(stdout, "RAISED HTTPError 403 http://evil.test/") || !strings.Contains(stdout, `"evil.test"`) {
		t.Fatalf("want urllib's HTTPError 403 with a body naming \"evil.test\"; stdout %q, stderr %q", stdout, stderr)
	}
	t.Logf("refused fetch: exit %v, stdout %q", r.Detail["exit_code"], stdout)
	// The answer says the sandbox refused it, and which key allows it.
	if refused := fmt.Sprint(r.Detail["sandbox_refused"]); !strings.Contains(refused, "evil.test:80") ||
		!strings.Contains(r.Reason, "the proxy refused evil.test:80") || !strings.Contains(r.Reason, "allowed_hosts") {
		t.Fatalf("the refusal is not in the answer: reason %q, sandbox_refused %v", r.Reason, r.Detail["sandbox_refused"])
	}
	for _, w := range []string{"found no address", "could not reach", "timed out reaching", "resolves to"} {
		if strings.Contains(stdout, w) {
			t.Fatalf("the proxy looked the refused name up (%q): %q", w, stdout)
		}
	}

	// A direct connection, bypassing the proxy, to the host's listener.
	direct := fmt.Sprintf(`python3 -c "import socket, sys; `+
		`sys.excepthook = lambda t, v, tb: print('FAILED', t.__name__, v); `+
		`socket.create_connection(('127.0.0.1', %d), timeout=5); print('CONNECTED')"`, port)
	r = call(t, c, "run_command", map[string]any{"command": direct})
	stdout, _ = r.Detail["stdout"].(string)
	if r.Code != "OK" || r.Detail["exit_code"] == float64(0) || strings.Contains(stdout, "CONNECTED") || !strings.Contains(stdout, "FAILED") {
		t.Fatalf("a direct connection bypassed the proxy, or the command did not run: code %s, detail %v", r.Code, r.Detail)
	}
	t.Logf("direct connection: exit %v, stdout %q", r.Detail["exit_code"], stdout)
	time.Sleep(100 * time.Millisecond) // an accept that was on its way is counted
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the host's listener on 127.0.0.1:%d accepted %d connection(s) from the sandbox", port, n)
	}
	c.Close()

	// The audit log: its name gets the server's name inserted
	// (audit.terminald.jsonl); glob the directory for it.
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(pol), "state", "audit*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("want one audit log next to the policy, found %v", logs)
	}
	type record struct {
		Kind   string         `json:"kind"`
		Action string         `json:"action"`
		Fields map[string]any `json:"fields"`
	}
	var refusals []record
	f, err := os.Open(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit log line is not JSON: %v: %s", err, sc.Text())
		}
		if rec.Action == "proxy.refused" {
			refusals = append(refusals, rec)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(refusals) != 1 {
		t.Fatalf("want exactly one proxy.refused record, found %d: %+v", len(refusals), refusals)
	}
	ref := refusals[0]
	reason, _ := ref.Fields["reason"].(string)
	if ref.Kind != "event" || ref.Fields["host"] != "evil.test" || ref.Fields["port"] != float64(80) || ref.Fields["method"] != "GET" ||
		!strings.Contains(reason, `"evil.test" is not in`) {
		t.Fatalf("proxy.refused record: %+v", ref)
	}
	t.Logf("audit record: %+v", ref)
	if v := runBin(t, cleanEnv(t), "audit", "verify", logs[0]); v.Code != 0 {
		t.Fatalf("audit verify: %+v", v)
	}
}
