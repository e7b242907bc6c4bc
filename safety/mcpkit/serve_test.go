package mcpkit

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/config"
)

// bodyReader is a handler that reads the whole body, as the MCP handler does.
func bodyReader() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				http.Error(w, "too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Read", strconv.FormatInt(n, 10))
		w.WriteHeader(http.StatusOK)
	})
}

func guarded(t *testing.T, token string, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	Guard(bodyReader(), token).ServeHTTP(w, r)
	return w
}

func req(host, origin, auth string, body io.Reader) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/mcp", body)
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	return r
}

// DNS rebinding: a web page on evil.example resolves its name to 127.0.0.1
// and posts to the local server; the Host header still says evil.example.
func TestGuardRefusesForeignHost(t *testing.T) {
	for _, host := range []string{"evil.example", "evil.example:8765", "127.0.0.1.evil.example",
		"localhost.evil.example:80", "192.0.2.1:8765", "", "[::ffff:192.0.2.1]:80"} {
		t.Run("refused "+caseName(host), func(t *testing.T) {
			if w := guarded(t, "", req(host, "", "", nil)); w.Code != http.StatusForbidden {
				t.Errorf("Host %q: status %d, want 403", host, w.Code)
			}
		})
	}
	for _, host := range []string{"127.0.0.1:8765", "localhost:8765", "[::1]:8765", "127.0.0.1", "localhost"} {
		t.Run("allowed "+host, func(t *testing.T) {
			if w := guarded(t, "", req(host, "", "", nil)); w.Code != http.StatusOK {
				t.Errorf("Host %q: status %d, want 200", host, w.Code)
			}
		})
	}
}

func TestGuardRefusesForeignOrigin(t *testing.T) {
	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example",
		"http://127.0.0.1.evil.example:8765", "null", "file://", "http://192.0.2.1", "%zz"} {
		t.Run(origin, func(t *testing.T) {
			if w := guarded(t, "", req("127.0.0.1:8765", origin, "", nil)); w.Code != http.StatusForbidden {
				t.Errorf("Origin %q: status %d, want 403", origin, w.Code)
			}
		})
	}
	// A token does not make a browser page on another site welcome.
	tok := strings.Repeat("t", 32)
	if w := guarded(t, tok, req("127.0.0.1:8765", "https://evil.example", "Bearer "+tok, nil)); w.Code != http.StatusForbidden {
		t.Errorf("foreign Origin with a token: %d", w.Code)
	}
}

func TestGuardAllowsLoopbackOrigin(t *testing.T) {
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1:8765", "http://[::1]:8765", "https://localhost"} {
		t.Run(origin, func(t *testing.T) {
			if w := guarded(t, "", req("127.0.0.1:8765", origin, "", nil)); w.Code != http.StatusOK {
				t.Errorf("Origin %q: status %d, want 200", origin, w.Code)
			}
		})
	}
}

func TestGuardRequiresBearerTokenWhenConfigured(t *testing.T) {
	tok := "s3cret-token-0123456789"
	host := "192.0.2.10:8765" // a token allows a non-loopback Host
	for name, auth := range map[string]string{
		"missing":     "",
		"wrong":       "Bearer wrong-token-0123456789",
		"prefix only": "Bearer " + tok[:10],
		"longer":      "Bearer " + tok + "x",
		"basic":       "Basic " + tok,
		"no scheme":   tok,
		"lower case":  "bearer " + tok,
	} {
		w := guarded(t, tok, req(host, "", auth, nil))
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s token: status %d, want 401", name, w.Code)
		}
		if !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s token: no WWW-Authenticate challenge", name)
		}
		if strings.Contains(w.Body.String(), tok) {
			t.Errorf("%s token: the response shows the token", name)
		}
	}
	if w := guarded(t, tok, req(host, "", "Bearer "+tok, nil)); w.Code != http.StatusOK {
		t.Errorf("right token: status %d, want 200", w.Code)
	}
}

func TestGuardCapsRequestBody(t *testing.T) {
	big := strings.Repeat("x", MaxBodyBytes+1)
	// Declared length over the cap: refused before reading.
	if w := guarded(t, "", req("127.0.0.1:1", "", "", strings.NewReader(big))); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared oversized body: %d", w.Code)
	}
	// No declared length (chunked): the reader stops at the cap.
	r := req("127.0.0.1:1", "", "", io.MultiReader(strings.NewReader(big)))
	r.ContentLength = -1
	if w := guarded(t, "", r); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversized body: %d", w.Code)
	}
	ok := strings.Repeat("x", MaxBodyBytes)
	if w := guarded(t, "", req("127.0.0.1:1", "", "", strings.NewReader(ok))); w.Code != http.StatusOK {
		t.Errorf("a body of exactly the cap: %d", w.Code)
	}
}

func tokenFile(t *testing.T, tok string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantFatal(t *testing.T, err error, what string) {
	t.Helper()
	var f *config.Fatal
	if !errors.As(err, &f) {
		t.Errorf("%s: %v (%T), want a config.Fatal", what, err, err)
	}
}

func TestTransportRefusesNonLoopbackWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:80", ":8765", "[::]:8765", "example.com:80", "127.0.0.1"} {
		t.Run(addr, func(t *testing.T) {
			tr := Transport{HTTP: addr}
			wantFatal(t, tr.Validate(), addr)
		})
	}
	tr := Transport{TokenFile: tokenFile(t, strings.Repeat("k", 32))}
	wantFatal(t, tr.Validate(), "a token file without --http")
	tr = Transport{HTTP: "192.0.2.1:80", TokenFile: filepath.Join(t.TempDir(), "missing")}
	wantFatal(t, tr.Validate(), "a missing token file")
	tr = Transport{HTTP: "192.0.2.1:80", TokenFile: tokenFile(t, strings.Repeat("k", 32)+"\n")}
	if err := tr.Validate(); err != nil {
		t.Errorf("a non-loopback address with a token: %v", err)
	}
}

// Serve must not rely on its caller having run Validate.
func TestServeRefusesNonLoopbackEvenWithoutValidate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := Serve(ctx, testServer(io.Discard), Transport{HTTP: "0.0.0.0:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	wantFatal(t, err, "Serve on 0.0.0.0 without a token")
}

func TestTransportRefusesShortToken(t *testing.T) {
	for _, tc := range []struct{ name, tok string }{
		{"empty", ""},
		{"five bytes", "short"},
		{"fifteen bytes", strings.Repeat("k", 15)},
		{"ten bytes padded with spaces", "   " + strings.Repeat("k", 10) + "   \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Transport{HTTP: "127.0.0.1:0", TokenFile: tokenFile(t, tc.tok)}
			wantFatal(t, tr.Validate(), "token "+strconv.Quote(tc.tok))
		})
	}
}

func TestTransportAcceptsLoopback(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1:0", "127.0.0.1:8765", "localhost:8765", "[::1]:8765", "127.1.2.3:80"} {
		t.Run(caseName(addr), func(t *testing.T) {
			tr := Transport{HTTP: addr}
			if err := tr.Validate(); err != nil {
				t.Errorf("%q: %v", addr, err)
			}
		})
	}
}

// caseName names a subtest after a value, or "empty".
func caseName(v string) string {
	if v == "" {
		return "empty"
	}
	return v
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestServeHTTPEndToEnd(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	tr := Transport{HTTP: addr}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- Serve(ctx, testServer(io.Discard), tr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	url := "http://" + addr + "/mcp"
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := c.Start(cctx); err != nil {
		t.Fatal(err)
	}
	var ireq mcp.InitializeRequest
	ireq.Params.ProtocolVersion = "2025-06-18"
	ireq.Params.ClientInfo = mcp.Implementation{Name: "mcpkit-e2e", Version: "1"}
	if _, err := c.Initialize(cctx, ireq); err != nil {
		t.Fatalf("Initialize over HTTP: %v", err)
	}
	tools, err := c.ListTools(cctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools over HTTP: %v", err)
	}
	if len(tools.Tools) != 4 {
		t.Fatalf("%d tools over HTTP", len(tools.Tools))
	}
	var creq mcp.CallToolRequest
	creq.Params.Name = "echo"
	creq.Params.Arguments = map[string]any{"path": "a"}
	if res, err := c.CallTool(cctx, creq); err != nil || res.IsError {
		t.Fatalf("CallTool over HTTP: %v %+v", err, res)
	}
	c.Close()

	// DNS rebinding: the right socket, the wrong Host.
	hreq, _ := http.NewRequestWithContext(cctx, http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	hreq.Host = "evil.example"
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "echo") {
		t.Fatalf("Host evil.example: %d %s", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop after cancel")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still listening after cancel")
	}
}

// DESIGN §2: the core packages import no MCP; mcpkit is the one place
// (with mcpkittest, its test support, which no non-test code imports).
func TestOnlyMcpkitImportsMcpGo(t *testing.T) {
	root := ".." // the safety module
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("not at the safety module: %v", err)
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		dir := filepath.Dir(filepath.Clean(path))
		inTestKit := dir == filepath.Join(root, "mcpkit", "mcpkittest")
		// safety/approval speaks the protocol itself: asking the person is
		// an elicitation request, or a 2026-07-28 input request; its test
		// support approvaltest answers those requests as a client does.
		inApprovalKit := dir == filepath.Join(root, "approval", "approvaltest")
		inMcpkit := dir == filepath.Join(root, "mcpkit") || inTestKit || dir == filepath.Join(root, "approval") || inApprovalKit
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, "github.com/mark3labs/mcp-go") && !inMcpkit {
				t.Errorf("%s imports %s; only safety/mcpkit, its subpackage mcpkittest, safety/approval (elicitation) and its subpackage approvaltest may import mcp-go", path, p)
			}
			if p == "github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest" && !inTestKit {
				t.Errorf("%s imports %s; it is test support, for _test.go files only", path, p)
			}
			if p == "github.com/bastion-mcp/bastion/safety/approval/approvaltest" && !inApprovalKit {
				t.Errorf("%s imports %s; it is test support, for _test.go files only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("only %d files checked; the walk missed the module", checked)
	}
}
