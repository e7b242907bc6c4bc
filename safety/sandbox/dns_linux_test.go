package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bastion-mcp/bastion/safety/proxy"
)

// lookupScript looks each name up with the C library's resolver and prints
// how it failed.
const lookupScript = "import socket, sys\nfor n in sys.argv[1:]:\n" +
	"    try:\n        socket.getaddrinfo(n, 443)\n        print('RESOLVED', n)\n" +
	"    except Exception as e:\n        print('FAILED', n, e)\n"

// TestNetworkDenialHoldsAndTheResolverRecordsNames: with the network
// denied, a name looked up in the command is answered "refused" by the
// view's resolver at once (no server outside is asked, nothing resolves)
// and Outcome.Lookups lists it, once however many queries asked; localhost
// resolves from /etc/hosts or is left out. A run that looks nothing up
// lists nothing.
func TestNetworkDenialHoldsAndTheResolverRecordsNames(t *testing.T) {
	b := newBox(t)
	out := b.run(t, b.spec(t, "python3", "-c", lookupScript, "registry.example.test", "Registry.Example.Test.", "localhost"))
	got := b.stdout.String()
	if strings.Contains(got, "RESOLVED registry") || !strings.Contains(got, "FAILED registry.example.test") {
		t.Fatalf("the lookup did not fail: %q", got)
	}
	if !slices.Equal(out.Lookups, []string{"registry.example.test"}) {
		t.Fatalf("Lookups %v, want [registry.example.test] (stdout %q)", out.Lookups, got)
	}
	t.Logf("three lookups refused in a run of %s", out.Duration)
	b = newBox(t)
	if out := b.run(t, b.spec(t, "python3", "-c", "print('quiet')")); len(out.Lookups) != 0 {
		t.Fatalf("a run that looked nothing up: Lookups %v", out.Lookups)
	}
}

// TestProxyModeRefusalNamesTheRunsHelper: a request the proxy refuses is
// reported with the process id of the helper that relayed it, which is
// the run's Outcome.HelperPID: the refusal can be told to the run that
// asked, not to another run going on at the same time. A name looked up
// directly (bypassing the proxy) is in Outcome.Lookups.
func TestProxyModeRefusalNamesTheRunsHelper(t *testing.T) {
	var mu sync.Mutex
	var refused []proxy.Refusal
	p, err := proxy.New(proxy.Options{AllowedHosts: []string{"allowed.test"},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.DNSError{Err: "no such host", Name: addr, IsNotFound: true}
		},
		OnRefuse: func(r proxy.Refusal) { mu.Lock(); refused = append(refused, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	b := newBox(t)
	s := b.spec(t, "python3", "-c", "import sys, urllib.request\n"+
		"try:\n    urllib.request.urlopen('http://evil.test/', timeout=5)\nexcept Exception as e:\n    print('ERR', e)\n"+lookupScript,
		"direct.example.test")
	s.Net, s.ProxySocket = NetProxy, sock
	out := b.run(t, s)
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || refused[0].Host != "evil.test" || refused[0].PeerPID <= 0 || refused[0].PeerPID != out.HelperPID {
		t.Fatalf("refusals %+v, helper pid %d (stdout %q)", refused, out.HelperPID, b.stdout.String())
	}
	if !slices.Equal(out.Lookups, []string{"direct.example.test"}) {
		t.Fatalf("Lookups %v", out.Lookups)
	}
}

// TestResolverAnswersRefusedToAnyQuery: refuseQuery answers a query with
// its id and question, QR set and RCODE 5, records its name in lower case
// without the trailing dot, and ignores responses and cut messages.
func TestResolverAnswersRefusedToAnyQuery(t *testing.T) {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1,
		3, 'W', 'w', 'W', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0, 1,
		0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0} // an EDNS record after the question
	name, reply, ok := refuseQuery(q)
	if !ok || name != "www.example" || reply[0] != 0x12 || reply[1] != 0x34 || reply[2] != 0x81 || reply[3] != 5 ||
		reply[5] != 1 || reply[11] != 0 || len(reply) != 29 {
		t.Fatalf("name %q reply % x ok %v", name, reply, ok)
	}
	resp := slices.Clone(q)
	resp[2] |= 0x80
	if _, _, ok := refuseQuery(resp); ok {
		t.Fatal("a response was answered")
	}
	if _, _, ok := refuseQuery(q[:20]); ok {
		t.Fatal("a cut query was answered")
	}
}

// FuzzRefuseQuery: whatever a command sends to the view's resolver, the
// parser neither panics nor answers more than the query held, and a name
// it records is printable.
func FuzzRefuseQuery(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w', 0, 0, 1, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, q []byte) {
		name, reply, ok := refuseQuery(q)
		if ok && (len(reply) > len(q) || reply[3] != 5) {
			t.Fatalf("reply % x to % x", reply, q)
		}
		if name != "" && !printableName(name) {
			t.Fatalf("unprintable name %q", name)
		}
	})
}
