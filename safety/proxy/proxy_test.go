package proxy

import (
	"bufio"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestAllowedHostConnectTunnels(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("example.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})

	c, br := h.connect("example.com:443")
	if _, err := io.WriteString(c, "hello through the tunnel"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("hello through the tunnel"))
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "hello through the tunnel" {
		t.Fatalf("echo = %q, %v", buf, err)
	}
	// Half-close: the client finishes sending and still reads the answer
	// the upstream writes after seeing EOF.
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "bye" {
		t.Fatalf("after half-close read %q, %v; want \"bye\" then EOF", rest, err)
	}
	if got := h.gotAllows(); !slices.Equal(got, []string{"example.com:443"}) {
		t.Errorf("OnAllow calls = %v, want [example.com:443]", got)
	}
	if r := h.gotRefusals(); len(r) != 0 {
		t.Errorf("refusals = %v, want none", r)
	}
	if d := res.dialed(); !slices.Equal(d, []string{"example.com:443"}) {
		t.Errorf("dials = %v", d)
	}

	t.Run("bytes sent right behind the CONNECT are not lost", func(t *testing.T) {
		c := h.conn()
		if _, err := io.WriteString(c, "CONNECT EXAMPLE.com.:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nearly bytes"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		got := make([]byte, len("early bytes"))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != "early bytes" {
			t.Fatalf("echo of pipelined bytes = %q, %v", got, err)
		}
	})
}

func TestHTTPSClientThroughConnect(t *testing.T) {
	// httptest's certificate is valid for example.com: a real TLS client
	// goes through the tunnel and verifies it end to end.
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "secure hello from "+r.Host)
	}))
	defer ts.Close()
	res := newResolver()
	res.set("example.com", ts.Listener.Addr().String())
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})

	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	base := ts.Client().Transport.(*http.Transport).Clone()
	base.TLSClientConfig.RootCAs = pool
	resp, err := h.client(base).Get("https://example.com/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "secure hello from example.com" {
		t.Fatalf("got %s %q", resp.Status, b)
	}
}

// seen is what the plain-HTTP upstream reports about a request.
type seen struct {
	Method, Path, Query, Host, Body string
	Header                          http.Header
}

func recordingUpstream(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Upstream", "yes")
		_ = json.NewEncoder(w).Encode(seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, string(b), r.Header})
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestAllowedHostPlainHTTPForwarded(t *testing.T) {
	ts := recordingUpstream(t)
	res := newResolver()
	res.set("example.com", ts.Listener.Addr().String())
	h := startProxyOn(t, "tcp", Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})

	req, _ := http.NewRequest("POST", "http://example.com/path/x?q=1", strings.NewReader("request body"))
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0OnNlY3JldA==")
	req.Header.Set("Proxy-Connection", "keep-alive")
	req.Header.Set("Connection", "X-Private")
	req.Header.Set("X-Private", "hop")
	req.Header.Set("X-Kept", "end-to-end")
	resp, err := h.client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s seen
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "yes" {
		t.Fatalf("status %s, headers %v", resp.Status, resp.Header)
	}
	if s.Method != "POST" || s.Path != "/path/x" || s.Query != "q=1" || s.Host != "example.com" || s.Body != "request body" {
		t.Errorf("upstream saw %+v", s)
	}
	for _, hop := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Private", "Connection"} {
		if v := s.Header.Get(hop); v != "" {
			t.Errorf("upstream received hop-by-hop header %s: %q", hop, v)
		}
	}
	if s.Header.Get("X-Kept") != "end-to-end" {
		t.Errorf("end-to-end header lost: %v", s.Header)
	}
	if got := h.gotAllows(); !slices.Equal(got, []string{"example.com:80"}) {
		t.Errorf("OnAllow calls = %v, want [example.com:80]", got)
	}
}

func TestHostHeaderCannotRedirectForwardedRequest(t *testing.T) {
	ts := recordingUpstream(t)
	res := newResolver()
	res.set("example.com", ts.Listener.Addr().String())
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})

	resp, _, _, _ := h.raw("GET http://example.com/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	var s seen
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Host != "example.com" {
		t.Errorf("upstream saw Host %q, want example.com (the checked URL host)", s.Host)
	}
	resp, body, _, _ := h.raw("GET http://evil.test/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, `"evil.test"`) {
		t.Errorf("URL host evil.test with Host example.com: %s %q", resp.Status, body)
	}
}

func TestHopByHopResponseHeadersNotForwarded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = http.ReadRequest(bufio.NewReader(c))
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: secret\r\nKeep-Alive: timeout=5\r\n"+
			"Proxy-Authenticate: Basic\r\nX-End: kept\r\nContent-Length: 2\r\n\r\nok")
	}()
	res := newResolver()
	res.set("example.com", l.Addr().String())
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})
	resp, err := h.client(nil).Get("http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "ok" || resp.Header.Get("X-End") != "kept" {
		t.Fatalf("body %q headers %v", b, resp.Header)
	}
	for _, hop := range []string{"X-Hop", "Keep-Alive", "Proxy-Authenticate"} {
		if v := resp.Header.Get(hop); v != "" {
			t.Errorf("client received hop-by-hop header %s: %q", hop, v)
		}
	}
}

func TestForwardedResponseStreams(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first ")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "second")
	}))
	defer ts.Close()
	defer close(release)
	res := newResolver()
	res.set("example.com", ts.Listener.Addr().String())
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})
	resp, err := h.client(nil).Get("http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make([]byte, len("first "))
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != "first " {
		t.Fatalf("first chunk %q, %v: the response was not streamed", got, err)
	}
	release <- struct{}{}
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "second" {
		t.Fatalf("rest %q", rest)
	}
}

func TestRefusedHostGets403NamingHostAndKey(t *testing.T) {
	res := newResolver()
	h := startProxy(t, Options{AllowedHosts: []string{"example.com", "*.example.org"}, Dial: res.Dial})
	const want = `host "evil.test" is not in [terminal.sandbox] allowed_hosts; add it there to allow it`
	pid := 0 // the refusal names the process that connected (this one), on Linux
	if runtime.GOOS == "linux" {
		pid = os.Getpid()
	}

	resp, body, _, _ := h.raw("CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n")
	if resp.StatusCode != 403 || strings.TrimSpace(body) != want {
		t.Errorf("CONNECT evil.test: %s %q, want 403 %q", resp.Status, body, want)
	}
	if r := h.gotRefusals(); len(r) != 1 || r[0] != (Refusal{Host: "evil.test", Port: 443, Method: "CONNECT", Reason: want, Kind: RefusedHost, PeerPID: pid}) {
		t.Errorf("refusals after CONNECT = %+v, want exactly one", r)
	}

	resp, err := h.client(nil).Get("http://Evil.Test./path")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || strings.TrimSpace(string(b)) != want {
		t.Errorf("GET http://Evil.Test./: %s %q, want 403 %q", resp.Status, b, want)
	}
	r := h.gotRefusals()
	if len(r) != 2 || r[1] != (Refusal{Host: "evil.test", Port: 80, Method: "GET", Reason: want, Kind: RefusedHost, PeerPID: pid}) {
		t.Errorf("refusals after GET = %+v, want exactly one more", r)
	}
	if d := res.dialed(); len(d) != 0 {
		t.Errorf("a refused host was dialled (and so resolved): %v", d)
	}
	if a := h.gotAllows(); len(a) != 0 {
		t.Errorf("OnAllow called for a refused host: %v", a)
	}

	t.Run("custom key", func(t *testing.T) {
		h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, ConfigKey: "allowed_hosts in policy.toml", Dial: res.Dial})
		resp, body, _, _ := h.raw("CONNECT evil.test:443 HTTP/1.1\r\n\r\n")
		if resp.StatusCode != 403 || !strings.Contains(body, `"evil.test" is not in allowed_hosts in policy.toml`) {
			t.Errorf("%s %q", resp.Status, body)
		}
	})
}

func TestWildcardMatchesSubdomainsNotApex(t *testing.T) {
	p, err := New(Options{AllowedHosts: []string{"*.Example.org.", "example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"a.example.org":           true,
		"a.b.c.example.org":       true,
		"A.EXAMPLE.ORG.":          true,
		"example.org":             false, // the apex
		"example.org.":            false,
		".example.org":            false,
		"badexample.org":          false,
		"example.org.evil.test":   false,
		"a.example.org.evil.test": false,
		"example.com":             true,
		"a.example.com":           false, // an exact entry admits no subdomain
		"*.example.org":           false,
		"a..example.org":          false,
		"":                        false,
		"a.example.org:443":       false,
	} {
		if got := p.Allowed(host); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
	p.Close()

	echo := startEcho(t)
	res := newResolver()
	res.set("deep.sub.example.org", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"*.example.org"}, Dial: res.Dial})
	h.connect("deep.sub.example.org:443")
	resp, body, _, _ := h.raw("CONNECT example.org:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, `host "example.org" is not in`) {
		t.Errorf("apex: %s %q", resp.Status, body)
	}
}

func TestIPLiteralRefused(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("203.0.113.7", echo.addr) // a documentation address, mapped to loopback by the test dialer
	res.set("198.51.100.1", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com", "*.example.org", "203.0.113.7"}, Dial: res.Dial})

	for _, target := range []string{
		"198.51.100.1:443",  // not listed
		"[2001:db8::1]:443", // IPv6, not listed
		"[::ffff:198.51.100.1]:443",
		"127.1:443", // numeric spellings resolvers read as addresses
		"2130706433:443",
		"0x7f000001:443",
		"1.2.3.example.org.1:443",
	} {
		t.Run("CONNECT "+target, func(t *testing.T) {
			resp, body, _, _ := h.raw("CONNECT " + target + " HTTP/1.1\r\n\r\n")
			if resp.StatusCode != 403 || !strings.Contains(body, "IP address") || !strings.Contains(body, "allowed_hosts") {
				t.Errorf("CONNECT %s: %s %q, want 403 naming IP addresses and allowed_hosts", target, resp.Status, body)
			}
		})
	}
	resp, err := h.client(nil).Get("http://198.51.100.1/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("GET http://198.51.100.1/: %s", resp.Status)
	}
	refusals := h.gotRefusals()
	if len(refusals) != 8 {
		t.Errorf("%d refusals, want 8: %+v", len(refusals), refusals)
	}
	for _, r := range refusals {
		if r.Kind != RefusedIPLiteral {
			t.Errorf("refusal %+v, want kind %s", r, RefusedIPLiteral)
		}
	}
	if d := res.dialed(); len(d) != 0 {
		t.Errorf("refused literals were dialled: %v", d)
	}
	// The literal itself, listed, is admitted, in either spelling.
	h.connect("203.0.113.7:443")
	h.connect("[::ffff:203.0.113.7]:443")
	if p := h.p; !p.Allowed("203.0.113.7") || p.Allowed("203.0.113.8") || p.Allowed("7.113.0.203.in-addr.arpa") {
		t.Error("Allowed disagrees on literals")
	}
}

func TestNonStandardPortRefused(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("example.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})

	for _, target := range []string{"example.com:8443", "example.com:22", "example.com:6379"} {
		t.Run("CONNECT "+target, func(t *testing.T) {
			resp, body, _, _ := h.raw("CONNECT " + target + " HTTP/1.1\r\n\r\n")
			if resp.StatusCode != 403 || !strings.Contains(body, `of host "example.com" is not allowed: the proxy connects only to ports 80 and 443`) {
				t.Errorf("CONNECT %s: %s %q", target, resp.Status, body)
			}
		})
	}
	resp, err := h.client(nil).Get("http://example.com:8080/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("GET :8080: %s", resp.Status)
	}
	r := h.gotRefusals()
	if len(r) != 4 || r[0].Port != 8443 || r[0].Kind != RefusedPort || r[3].Port != 8080 || r[3].Method != "GET" {
		t.Errorf("refusals = %+v", r)
	}
	if d := res.dialed(); len(d) != 0 {
		t.Errorf("refused ports were dialled: %v", d)
	}
	h.connect("example.com:443")
	h.connect("example.com:80")

	t.Run("Ports replaces the default", func(t *testing.T) {
		h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial, Ports: []int{8443}})
		h.connect("example.com:8443")
		resp, body, _, _ := h.raw("CONNECT example.com:443 HTTP/1.1\r\n\r\n")
		if resp.StatusCode != 403 || !strings.Contains(body, "only to ports 8443") {
			t.Errorf("%s %q", resp.Status, body)
		}
	})
}

func TestAllowedNameResolvingToLoopbackRefusedByDefaultDialer(t *testing.T) {
	// A real service on loopback, and "localhost" allowed: the default
	// dialer must still refuse, after resolution, and the service must see
	// no connection at all.
	addr, accepted := countingListener(t)
	_, port, _ := net.SplitHostPort(addr)
	portN := mustAtoi(t, port)
	h := startProxy(t, Options{AllowedHosts: []string{"localhost"}, Ports: []int{portN, 443}})

	resp, body, _, _ := h.raw("CONNECT localhost:" + port + " HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, `host "localhost" resolves to`) || !strings.Contains(body, "loopback address") {
		t.Errorf("CONNECT localhost: %s %q", resp.Status, body)
	}
	resp2, err := h.client(nil).Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if resp2.StatusCode != 403 || !strings.Contains(string(b), "loopback address") {
		t.Errorf("GET http://localhost: %s %q", resp2.Status, b)
	}
	if n := accepted(); n != 0 {
		t.Errorf("the loopback service accepted %d connections through the proxy", n)
	}
	r := h.gotRefusals()
	if len(r) != 2 || r[0].Kind != RefusedAddress || r[0].Method != "CONNECT" || r[1].Kind != RefusedAddress || r[1].Method != "GET" {
		t.Errorf("refusals = %+v, want one per request, kind %s", r, RefusedAddress)
	}
	if a := h.gotAllows(); len(a) != 0 {
		t.Errorf("OnAllow called: %v", a)
	}
}

func TestDefaultDialRefusesNonPublicAddresses(t *testing.T) {
	addr, accepted := countingListener(t)
	_, port, _ := net.SplitHostPort(addr)
	dial := DefaultDial(2 * time.Second)
	for _, a := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "localhost", "127.0.0.2", "0.0.0.0", "[::1]", "[::]"} {
		t.Run(a, func(t *testing.T) {
			c, err := dial(t.Context(), "tcp", a+":"+port)
			if err == nil {
				c.Close()
				t.Fatalf("DefaultDial(%s) connected", a)
			}
			if !errors.Is(err, ErrNonPublicAddress) {
				t.Errorf("DefaultDial(%s) = %v, want ErrNonPublicAddress", a, err)
			}
		})
	}
	if _, err := dial(t.Context(), "udp", "192.0.2.1:53"); err == nil {
		t.Error("DefaultDial dialled UDP")
	}
	if n := accepted(); n != 0 {
		t.Errorf("listener accepted %d connections", n)
	}
}

func TestAddrClass(t *testing.T) {
	for addr, want := range map[string]string{
		"93.184.215.14":         "",
		"2606:2800:21f:cb07::1": "",
		"203.0.113.7":           "",
		"127.0.0.1":             "loopback",
		"::1":                   "loopback",
		"::ffff:127.0.0.1":      "loopback",
		"10.1.2.3":              "private",
		"172.16.0.1":            "private",
		"192.168.1.1":           "private",
		"fd00::1":               "private",
		"169.254.169.254":       "link-local",
		"fe80::1":               "link-local",
		"224.0.0.1":             "multicast",
		"ff02::1":               "multicast",
		"0.0.0.0":               "unspecified",
		"::":                    "unspecified",
		"100.64.0.1":            "CGNAT",
		"100.127.255.254":       "CGNAT",
		"0.1.2.3":               "this-network",
		"255.255.255.255":       "reserved",
		"198.18.0.1":            "reserved",
		"fec0::1":               "reserved",
		"::7f00:1":              "reserved",
		"64:ff9b::7f00:1":       "NAT64 form of a loopback",
		"64:ff9b::5db8:d70e":    "",
		"2002:c0a8:101::1":      "6to4 form of a private",
		"2002:5db8:d70e::1":     "",
	} {
		if got := AddrClass(mustAddr(t, addr)); got != want {
			t.Errorf("AddrClass(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestMalformedRequestsGet400AndProxyKeepsServing(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("example.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial}) // default 64 KiB header cap

	huge := strings.Repeat("a", 128<<10)
	cases := []struct {
		name, req string
		code      int
	}{
		{"origin-form", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"origin-form with path", "GET /x?y HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"https absolute form", "GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"ftp absolute form", "GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"empty URL host", "GET http:///x HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"URL host with empty label", "GET http://exa..mple.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"URL host with bad port", "GET http://example.com:99999/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"URL host non-ASCII", "GET http://ex\xc3\xa4mple.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"CONNECT without port", "CONNECT example.com HTTP/1.1\r\n\r\n", 400},
		{"CONNECT empty host", "CONNECT :443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT port 0", "CONNECT example.com:0 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT port too big", "CONNECT example.com:65536 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT negative port", "CONNECT example.com:-1 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT plus port", "CONNECT example.com:+443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT named port", "CONNECT example.com:https HTTP/1.1\r\n\r\n", 400},
		{"CONNECT path", "CONNECT /example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT URL", "CONNECT http://example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT with path after port", "CONNECT example.com:443/x HTTP/1.1\r\n\r\n", 400},
		{"CONNECT unclosed bracket", "CONNECT [::1:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT bracketed name", "CONNECT [example.com]:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT userinfo", "CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT NUL in host", "CONNECT exa\x00mple.com:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT wildcard host", "CONNECT *.example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT overlong label", "CONNECT " + strings.Repeat("a", 64) + ".example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"NUL in header value", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-A: a\x00b\r\n\r\n", 400},
		{"NUL in header name", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX\x00A: b\r\n\r\n", 400},
		{"space in header name", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX A: b\r\n\r\n", 400},
		{"garbage request line", "garbage\r\n\r\n", 400},
		{"binary", "\x00\x01\x02\x03\xff\xfe\r\n\r\n", 400},
		{"missing version", "GET http://example.com/\r\n\r\n", 400},
		{"bad version", "GET http://example.com/ HTTP/x.y\r\nHost: example.com\r\n\r\n", 400},
		{"HTTP/1.1 without Host", "GET http://example.com/ HTTP/1.1\r\n\r\n", 400},
		{"conflicting Content-Length", "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
		{"huge header", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Big: " + huge + "\r\n\r\n", 431},
		{"huge request line", "GET http://example.com/" + huge + " HTTP/1.1\r\nHost: example.com\r\n\r\n", 431},
		{"many headers", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n" + strings.Repeat("X-N: 1\r\n", 10000) + "\r\n", 431},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, _, _ := h.raw(tc.req)
			if resp.StatusCode != tc.code {
				t.Errorf("%q: %s %q, want %d", truncate(tc.req), resp.Status, body, tc.code)
			}
		})
	}
	if r := h.gotRefusals(); len(r) != 0 {
		t.Errorf("malformed requests were reported as policy refusals: %+v", r)
	}
	// Still serving.
	c, br := h.connect("example.com:443")
	_, _ = io.WriteString(c, "ping")
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("after the malformed requests: %q %v", got, err)
	}
}

func TestSlowHeaderIsCutOff(t *testing.T) {
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, HeaderTimeout: 200 * time.Millisecond})
	c := h.conn()
	if _, err := io.WriteString(c, "GET http://exam"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v (want the proxy to close the connection)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %v", d)
	}
}

func TestConnectionCapAnswers503(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("example.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial, MaxConns: 2})
	c1, _ := h.connect("example.com:443")
	h.connect("example.com:443")
	resp, body, _, _ := h.raw("CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 503 || !strings.Contains(body, "too many connections") {
		t.Fatalf("third connection: %s %q", resp.Status, body)
	}
	c1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := h.conn()
		_, _ = io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a slot was not freed after a tunnel closed: %v %v", resp, err)
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
}

func TestIdleTunnelIsClosed(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("example.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial, IdleTimeout: time.Second})
	c, br := h.connect("example.com:443")
	// Traffic keeps it open past the idle timeout...
	for range 6 {
		time.Sleep(250 * time.Millisecond)
		_, _ = io.WriteString(c, "x")
		if _, err := br.ReadByte(); err != nil {
			t.Fatalf("busy tunnel closed: %v", err)
		}
	}
	// ...silence ends it.
	start := time.Now()
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("read: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("idle tunnel closed after %v", d)
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("example.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: []string{"example.com"}, Dial: res.Dial})
	c, br := h.connect("example.com:443")
	_, _ = io.WriteString(c, "ping")
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}
	h.connect("example.com:443") // a second, idle tunnel

	closed := make(chan error, 1)
	go func() { closed <- h.p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with tunnels open")
	}
	if _, err := io.ReadAll(br); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the tunnel stayed open after Close: %v", err)
		}
	}
	for range 2 {
		select {
		case <-echo.ended:
		case <-time.After(5 * time.Second):
			t.Fatal("an upstream connection outlived Close")
		}
	}
	select {
	case err := <-h.served:
		h.served <- err // for the cleanup's check
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if c, err := net.Dial(h.network, h.addr); err == nil {
		c.Close()
		t.Error("the proxy still accepts connections after Close")
	}
	// Serve after Close returns nil at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.p.Serve(l); err != nil {
		t.Errorf("Serve after Close = %v, want nil", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"pattern with a scheme", Options{AllowedHosts: []string{"https://example.com"}}},
		{"pattern with a port", Options{AllowedHosts: []string{"example.com:443"}}},
		{"port 0", Options{Ports: []int{0}}},
		{"port 70000", Options{Ports: []int{70000}}},
		{"negative MaxConns", Options{MaxConns: -1}},
		{"negative IdleTimeout", Options{IdleTimeout: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			var re *result.Error
			if !errors.As(err, &re) || re.Code != result.InvalidRequest {
				t.Errorf("New(%+v) = %v, want INVALID_REQUEST", tc.o, err)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
