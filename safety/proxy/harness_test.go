package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// resolver is the tests' Dial: it maps host names to loopback listeners,
// so no test traffic leaves the machine, and records every dial.
type resolver struct {
	mu    sync.Mutex
	addrs map[string]string // host -> 127.0.0.1:port
	dials []string
}

func newResolver() *resolver { return &resolver{addrs: map[string]string{}} }

func (r *resolver) set(host, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs[host] = addr
}

func (r *resolver) dialed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dials...)
}

func (r *resolver) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.dials = append(r.dials, addr)
	real, ok := r.addrs[host]
	r.mu.Unlock()
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, real)
}

// harness is a Proxy serving on a UNIX socket (or loopback TCP) in a
// temporary directory, with its refusals and admissions recorded.
type harness struct {
	t        *testing.T
	p        *Proxy
	network  string
	addr     string
	mu       sync.Mutex
	refusals []Refusal
	allows   []string
	served   chan error
}

func startProxy(t *testing.T, o Options) *harness {
	return startProxyOn(t, "unix", o)
}

func startProxyOn(t *testing.T, network string, o Options) *harness {
	t.Helper()
	h := &harness{t: t, network: network, served: make(chan error, 1)}
	if o.OnRefuse == nil {
		o.OnRefuse = func(r Refusal) {
			h.mu.Lock()
			h.refusals = append(h.refusals, r)
			h.mu.Unlock()
		}
	}
	if o.OnAllow == nil {
		o.OnAllow = func(host string, port int) {
			h.mu.Lock()
			h.allows = append(h.allows, net.JoinHostPort(host, strconv.Itoa(port)))
			h.mu.Unlock()
		}
	}
	p, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	var l net.Listener
	if network == "unix" {
		l, err = net.Listen("unix", filepath.Join(t.TempDir(), "p.sock"))
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	h.addr = l.Addr().String()
	go func() { h.served <- p.Serve(l) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-h.served:
			if err != nil {
				t.Errorf("Serve returned %v after Close, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return after Close")
		}
	})
	return h
}

func (h *harness) gotRefusals() []Refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Refusal(nil), h.refusals...)
}

func (h *harness) gotAllows() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.allows...)
}

// conn opens a client connection to the proxy.
func (h *harness) conn() net.Conn {
	h.t.Helper()
	c, err := net.Dial(h.network, h.addr)
	if err != nil {
		h.t.Fatalf("dial proxy: %v", err)
	}
	h.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// raw sends req on a new connection and reads one response.
func (h *harness) raw(req string) (*http.Response, string, net.Conn, *bufio.Reader) {
	h.t.Helper()
	c := h.conn()
	if _, err := io.WriteString(c, req); err != nil {
		h.t.Fatalf("write request: %v", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		h.t.Fatalf("read response to %q: %v", truncate(req), err)
	}
	var body string
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	return resp, body, c, br
}

// connect opens a CONNECT tunnel to target and returns the connection and
// its reader, failing the test unless the proxy answers 200.
func (h *harness) connect(target string) (net.Conn, *bufio.Reader) {
	h.t.Helper()
	c := h.conn()
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		h.t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		h.t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("CONNECT %s: %s %s", target, resp.Status, b)
	}
	return c, br
}

// client is an http.Client that uses the proxy the way a program with
// HTTP_PROXY/HTTPS_PROXY set does.
func (h *harness) client(base *http.Transport) *http.Client {
	var tr *http.Transport
	if base != nil {
		tr = base.Clone()
	} else {
		tr = &http.Transport{}
	}
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid:3128"})
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, h.network, h.addr)
	}
	h.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// echoServer is a TLS-less TCP upstream: it echoes until the client
// half-closes, then writes "bye" and closes. It counts connections.
type echoServer struct {
	addr     string
	mu       sync.Mutex
	accepted int
	ended    chan struct{} // one value per connection that saw EOF or an error
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e := &echoServer{addr: l.Addr().String(), ended: make(chan struct{}, 100)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.accepted++
			e.mu.Unlock()
			go func() {
				defer c.Close()
				_, err := io.Copy(c, c)
				if err == nil {
					_, _ = io.WriteString(c, "bye")
				}
				e.ended <- struct{}{}
			}()
		}
	}()
	return e
}

func (e *echoServer) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.accepted
}

// countingListener is a loopback listener that only counts connections.
func countingListener(t *testing.T) (addr string, count func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			c.Close()
		}
	}()
	return l.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}
