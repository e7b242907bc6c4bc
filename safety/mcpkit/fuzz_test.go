package mcpkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// FuzzFileContextURI: any URI a client sends is parsed and resolved
// against a real root without panicking, and a path it resolves stays
// inside the root; the answer is JSON whatever the URI.
func FuzzFileContextURI(f *testing.F) {
	for _, s := range []string{
		"file-context://", "file-context://a", "file-context://a/b?cursor=200", "file-context://%2e%2e/etc",
		"file-context://../x", "file-context:///etc/passwd", "file-context://a%3Fb?cursor=x", "file-context://a#frag",
		"file-context://a?foo=1", "file-context://%zz", "file-context://a?cursor=-1", "http://a", "file-context://sub/../../x",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("x"), 0o644); err != nil {
		f.Fatal(err)
	}
	root, err := jail.OpenRoot(dir)
	if err != nil {
		f.Fatal(err)
	}
	defer root.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := risk.NewEngine(risk.Options{Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	fc := &fileContext{roots: []*jail.Root{root}, eng: eng, log: log}
	f.Fuzz(func(t *testing.T, uri string) {
		p, _, err := parseFileContextURI(uri)
		if err == nil {
			if _, rel, err := resolve(fc.roots, p); err == nil && rel != "." && !filepath.IsLocal(rel) {
				t.Fatalf("%q resolved to %q, outside the root", uri, rel)
			}
		}
		b, err := fc.answer(uri)
		if err == nil && !json.Valid(b) {
			t.Fatalf("%q answered with invalid JSON: %q", uri, b)
		}
	})
}

// FuzzStdioGate: whatever bytes arrive on stdin, every line the gate
// passes to the server is within the cap, valid UTF-8 and not a batch, and
// every answer the gate writes itself is one valid JSON-RPC error. Once
// the session is initialized a short last line without a newline passes
// whole; before, no request but initialize, ping, server/discover or a
// 2026-07-28 request passes until an initialize has.
func FuzzStdioGate(f *testing.F) {
	for _, s := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", "[1]\n", "\xff\n", "  [\n", "\n\n",
		"{\"id\":\"x\",\"a\":\"" + strings.Repeat("y", 100) + "\"}\n{}\n", "no newline at the end",
		"{\"a\":1,\"id\":7," + strings.Repeat("z", 90) + "\n", "{\"id\":1,\"method\":\"tools/list\"}\n",
		"{\"id\":1,\"method\":\"initialize\"}\n{\"id\":2,\"method\":\"x\"}",
	} {
		f.Add([]byte(s))
	}
	const max = 64
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, initialized := range []bool{true, false} {
			var out bytes.Buffer
			g := newLineGate(bytes.NewReader(in), &out, max)
			g.initialized = initialized
			passed, err := io.ReadAll(g)
			if err != nil {
				t.Fatal(err)
			}
			checkGateOutput(t, in, passed, &out, max)
			if !initialized {
				checkLifecycle(t, passed)
			} else if utf8.Valid(in) && !bytes.Contains(in, []byte("[")) && bytes.Count(in, []byte("\n")) == 0 && len(in) <= max && !bytes.Equal(passed, in) {
				t.Fatalf("a short last line without a newline did not pass whole: %q → %q", in, passed)
			}
		}
	})
}

func checkGateOutput(t *testing.T, in, passed []byte, out *bytes.Buffer, max int) {
	for _, line := range bytes.SplitAfter(passed, []byte("\n")) {
		if len(line) > max {
			t.Fatalf("a line of %d bytes passed the %d-byte cap", len(line), max)
		}
		if code, _ := screen(line); code != 0 {
			t.Fatalf("a line the gate refuses passed: %q", line)
		}
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var m struct {
			JSONRPC string
			ID      any
			Error   struct{ Code int }
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.JSONRPC != "2.0" || m.Error.Code > -32000 {
			t.Fatalf("the gate answered %q", sc.Bytes())
		}
	}
	if len(passed) > len(in) {
		t.Fatalf("%d bytes passed of %d that arrived", len(passed), len(in))
	}
}

// checkLifecycle: in what passed a fresh gate, no request other than
// initialize, ping and server/discover, and none without a 2026-07-28
// version in its _meta, comes before the first initialize.
func checkLifecycle(t *testing.T, passed []byte) {
	for _, line := range bytes.SplitAfter(passed, []byte("\n")) {
		var m struct {
			ID     any
			Method string
			Params struct {
				Meta map[string]any `json:"_meta"`
			}
		}
		if json.Unmarshal(line, &m) != nil || m.Method == "" {
			continue
		}
		if m.Method == "initialize" {
			return
		}
		v, _ := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		if m.ID != nil && m.Method != "ping" && m.Method != "server/discover" && v < "2026-07-28" {
			t.Fatalf("the request %q passed before initialize", line)
		}
	}
}

// FuzzHTTPRequest sends arbitrary raw HTTP requests through the HTTP path up
// to the MCP handler (Guard and the Streamable HTTP server): nothing
// panics, and the MCP handler sees a request only when its Host and Origin
// are allowed and it carries the token.
func FuzzHTTPRequest(f *testing.F) {
	const tok = "fuzz-token-0123456789"
	for _, s := range []string{
		"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + tok + "\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
		"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 2\r\n\r\n[]",
		"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil.example\r\nAuthorization: Bearer " + tok + "\r\nContent-Length: 2\r\n\r\n{}",
		"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + tok + "\r\n\r\n",
		"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer x\r\nMcp-Session-Id: abc\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: [::1]\r\nAuthorization: Bearer " + tok + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[1,2]\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	mcpHandler := server.NewStreamableHTTPServer(testServer(io.Discard), server.WithEndpointPath("/mcp"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		r = r.WithContext(ctx)
		reached := false
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached = true
			mcpHandler.ServeHTTP(w, r)
		})
		w := httptest.NewRecorder()
		Guard(next, tok).ServeHTTP(w, r)
		if !reached {
			return
		}
		if !tokenEqual(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), tok) || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			t.Fatalf("the MCP handler was reached without the token: %q", raw)
		}
		if o := r.Header.Get("Origin"); o != "" && !strings.Contains(o, "localhost") && !strings.Contains(o, "127.") && !strings.Contains(o, "::1") {
			t.Fatalf("the MCP handler was reached from Origin %q", o)
		}
		if w.Code >= 500 {
			t.Fatalf("status %d for %q", w.Code, raw)
		}
	})
}
