package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bastion-mcp/bastion/safety/proxy"
)

// TestProxyModeAllowsListedHostRefusesOthersAndDirect runs a command in
// network = "proxy": a request to an allowed host goes through terminald's
// proxy (through the helper's relay) and arrives at a local upstream; a
// refused host gets the proxy's 403 naming it and is reported once; a
// direct connection to the same upstream, bypassing the proxy, fails.
func TestProxyModeAllowsListedHostRefusesOthersAndDirect(t *testing.T) {
	var hits atomic.Int32
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "upstream-says-hello")
	})}
	go srv.Serve(up)
	t.Cleanup(func() { srv.Close() })
	var refused atomic.Int32
	p, err := proxy.New(proxy.Options{AllowedHosts: []string{"allowed.test"},
		// The test resolver: the allowed name is the local upstream.
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", up.Addr().String())
		},
		OnRefuse: func(proxy.Refusal) { refused.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	sock := filepath.Join(state, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })

	fetch := func(url string) (Outcome, string) {
		b := newBox(t)
		s := b.spec(t, "python3", "-c", "import sys, urllib.request\n"+
			"try:\n    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())\n"+
			"except Exception as e:\n    print('ERR', e)\n    sys.exit(1)\n", url)
		s.Net, s.ProxySocket = NetProxy, sock
		return b.run(t, s), b.stdout.String()
	}
	if out, got := fetch("http://allowed.test/"); out.ExitCode != 0 || !strings.Contains(got, "upstream-says-hello") {
		t.Fatalf("allowed host through the proxy: %+v %q", out, got)
	}
	before := hits.Load()
	if out, got := fetch("http://evil.test/"); out.ExitCode == 0 || !strings.Contains(got, "403") || refused.Load() != 1 {
		t.Fatalf("refused host: %+v %q, refusals %d", out, got, refused.Load())
	}
	// Bypassing the proxy: straight to the upstream's address.
	b := newBox(t)
	s := b.spec(t, "python3", "-c", "import socket, sys\n"+
		"try:\n    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n    print('CONNECTED')\n"+
		"except Exception as e:\n    print('ERR', e)\n", fmt.Sprint(up.Addr().(*net.TCPAddr).Port))
	s.Net, s.ProxySocket = NetProxy, sock
	if b.run(t, s); strings.Contains(b.stdout.String(), "CONNECTED") || hits.Load() != before {
		t.Fatalf("a direct connection bypassed the proxy: %q", b.stdout.String())
	}
}
