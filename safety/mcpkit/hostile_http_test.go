package mcpkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// httpMemoryCapKB bounds the HTTP server's peak RSS (VmHWM) through every
// hostile input below: bodies are capped at MaxBodyBytes (4 MiB), headers
// at MaxHeaderBytes (64 KiB), open connections at MaxConns.
const httpMemoryCapKB = 96 << 10

// startHTTPChild starts a server process on a free loopback port and waits
// until it listens.
func startHTTPChild(t testing.TB, env ...string) (*child, string) {
	t.Helper()
	addr := freeAddr(t)
	c := startChild(t, "http="+addr, env...)
	waitListening(t, addr)
	return c, addr
}

// waitListening waits up to 20 s for a server to listen on addr.
func waitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not listen: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// session is one Streamable HTTP client session, spoken raw.
type session struct {
	url, id, token string
	hc             *http.Client
}

func (s *session) post(t testing.TB, body []byte) (int, map[string]any) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if s.id != "" {
		r.Header.Set("Mcp-Session-Id", s.id)
	}
	if s.token != "" {
		r.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.hc.Do(r)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, decodeReply(raw)
}

// decodeReply reads a JSON body, or the first data line of an SSE body.
func decodeReply(raw []byte) map[string]any {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			raw = []byte(d)
			break
		}
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return map[string]any{"body": string(raw)}
	}
	return m
}

func (s *session) initialize(t testing.TB) {
	t.Helper()
	if code, m := s.post(t, []byte(initLine)); code != http.StatusOK || m["result"] == nil {
		t.Fatalf("initialize: %d %v", code, trim(m))
	}
	if code, _ := s.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", code)
	}
}

func (s *session) echo(t testing.TB, id int) {
	t.Helper()
	code, m := s.post(t, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"path":"p%d"}}}`, id, id)))
	if code != http.StatusOK || m["result"] == nil || m["id"] != float64(id) {
		t.Fatalf("echo %d: %d %v", id, code, trim(m))
	}
}

func newSession(addr string) *session {
	return &session{url: "http://" + addr + "/mcp", hc: &http.Client{Timeout: 60 * time.Second}}
}

// TestHTTPHostileInput drives a server process over Streamable HTTP with
// the hostile inputs of issue 11; after each a fresh call proves it serves.
func TestHTTPHostileInput(t *testing.T) {
	c, addr := startHTTPChild(t)
	s := newSession(addr)
	t.Run("tools call before initialize", func(t *testing.T) {
		code, m := s.post(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
		if code < 400 || code > 499 || m["result"] != nil {
			t.Fatalf("tools/call with no session: %d %v", code, trim(m))
		}
	})
	s.initialize(t)
	n := 10
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		code   int
	}{
		{"malformed JSON", []byte(`{"jsonrpc":"2.0","id":1,"method":`), 400, -32700},
		{"invalid UTF-8", []byte("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}"), 400, -32700},
		{"batch array", []byte(`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`), 400, -32600},
		{"arrays nested 100000 deep", []byte(nested(100000, "[", "]", "1")), 400, -32600},
		{"objects nested 100000 deep", []byte(`{"jsonrpc":"2.0","id":4,"method":"ping","params":` + nested(100000, `{"a":`, "}", "1") + "}"), 400, -32700},
		{"unknown method", []byte(`{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`), 200, -32601},
		{"cancellation of an unknown id", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`), 202, 0},
		{"tools call with 10 MB arguments", bigCall("ten-mb", 10<<20), 413, 0},
		{"one 100 MB body", bigCall("hundred-mb", 100<<20), 413, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := s.post(t, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, trim(m))
			}
			if tc.code != 0 {
				e, _ := m["error"].(map[string]any)
				if e == nil || e["code"] != float64(tc.code) {
					t.Fatalf("want error %d: %v", tc.code, trim(m))
				}
			}
			n++
			s.echo(t, n)
		})
	}
	t.Run("one 100 MB body, chunked", func(t *testing.T) {
		r, _ := http.NewRequest(http.MethodPost, s.url, io.MultiReader(bytes.NewReader(bigCall("chunked", 100<<20))))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Mcp-Session-Id", s.id)
		resp, err := http.DefaultClient.Do(r)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("chunked 100 MB body: %d, want 413", resp.StatusCode)
			}
		} // else the server closed the connection while the client still wrote: refused too
		s.echo(t, 800)
	})
	t.Run("duplicate request ids are each answered", func(t *testing.T) {
		s.echo(t, 7)
		s.echo(t, 7)
	})
	t.Run("foreign Host and Origin", func(t *testing.T) {
		for _, h := range [][2]string{{"Host", "evil.example"}, {"Origin", "https://evil.example"}} {
			r, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			r.Header.Set("Content-Type", "application/json")
			if h[0] == "Host" {
				r.Host = h[1]
			} else {
				r.Header.Set(h[0], h[1])
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s: %d, want 403", h[0], h[1], resp.StatusCode)
			}
		}
		s.echo(t, 900)
	})
	hwm := status(t, c.cmd.Process.Pid, "VmHWM")
	t.Logf("HTTP server peak RSS (VmHWM) after every hostile input: %d KiB (cap %d KiB)", hwm, httpMemoryCapKB*raceMemFactor)
	if hwm > httpMemoryCapKB*raceMemFactor {
		t.Errorf("peak RSS %d KiB over the cap %d KiB", hwm, httpMemoryCapKB*raceMemFactor)
	}
}

// goT reports a fatal failure from a goroutine other than the test's: it
// marks the test failed and ends that goroutine only.
type goT struct{ testing.TB }

func (g goT) Fatalf(format string, args ...any) {
	g.TB.Helper()
	g.TB.Errorf(format, args...)
	runtime.Goexit()
}

func (g goT) Fatal(args ...any) {
	g.TB.Helper()
	g.TB.Error(args...)
	runtime.Goexit()
}

// TestHTTPConcurrentSessions: 200 sessions at once, each initialising and
// making 10 calls.
func TestHTTPConcurrentSessions(t *testing.T) {
	c, addr := startHTTPChild(t)
	const sessions, calls = 200, 10
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < sessions; i++ {
		wg.Go(func() {
			t := goT{t}
			s := newSession(addr)
			s.initialize(t)
			for j := 0; j < calls; j++ {
				s.echo(t, i*100+j)
			}
		})
	}
	wg.Wait()
	hwm := status(t, c.cmd.Process.Pid, "VmHWM")
	t.Logf("%d sessions x %d calls in %s; server peak RSS %d KiB", sessions, calls, time.Since(start).Round(time.Millisecond), hwm)
	if hwm > httpMemoryCapKB*raceMemFactor {
		t.Errorf("peak RSS %d KiB over the cap %d KiB", hwm, httpMemoryCapKB*raceMemFactor)
	}
}

// TestHTTPSlowClientAndConnectionFlood: a body trickled a byte a second is
// cut off at the body deadline with 408, and 1,000 idle connections do not
// stop a real client being served.
func TestHTTPSlowClientAndConnectionFlood(t *testing.T) {
	c, addr := startHTTPChild(t, "MCPKIT_TEST_BODY_TIMEOUT=2s")
	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", addr)
		start := time.Now()
		got := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			got <- line
		}()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case line := <-got:
				if !strings.Contains(line, "408") {
					t.Fatalf("trickled body answered %q, want 408", line)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("cut off after %s, want about 2s", d)
				}
				t.Logf("trickled body cut off with %q after %s", strings.TrimSpace(line), time.Since(start).Round(time.Millisecond))
				newSession(addr).initialize(t)
				return
			case <-tick.C:
				_, _ = conn.Write([]byte(" "))
			case <-time.After(30 * time.Second):
				t.Fatal("the trickled body was never cut off")
			}
		}
	})
	t.Run("1000 idle connections", func(t *testing.T) {
		var conns []net.Conn
		defer func() {
			for _, cn := range conns {
				cn.Close()
			}
		}()
		for i := 0; i < 1000; i++ {
			cn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, cn)
		}
		start := time.Now()
		s := newSession(addr)
		s.initialize(t)
		s.echo(t, 1)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a real client took %s during the flood", d)
		}
		hwm := status(t, c.cmd.Process.Pid, "VmHWM")
		t.Logf("served in %s beside 1000 idle connections; server peak RSS %d KiB", time.Since(start).Round(time.Millisecond), hwm)
		if hwm > httpMemoryCapKB*raceMemFactor {
			t.Errorf("peak RSS %d KiB over the cap %d KiB", hwm, httpMemoryCapKB*raceMemFactor)
		}
	})
}

// TestHTTPBearerToken: a server that requires a token refuses a missing or
// wrong one with 401 and serves the right one.
func TestHTTPBearerToken(t *testing.T) {
	tok := strings.Repeat("k", 40)
	_, addr := startHTTPChild(t, "MCPKIT_TEST_TOKEN_FILE="+tokenFile(t, tok))
	for name, give := range map[string]string{"missing": "", "wrong": strings.Repeat("j", 40), "short": "k", "longer": tok + "k"} {
		t.Run(name, func(t *testing.T) {
			s := newSession(addr)
			s.token = give
			if code, m := s.post(t, []byte(initLine)); code != http.StatusUnauthorized {
				t.Fatalf("%s token: %d %v", name, code, trim(m))
			}
		})
	}
	s := newSession(addr)
	s.token = tok
	s.initialize(t)
	s.echo(t, 1)
}
