package mcpkit

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/config"
)

// MaxBodyBytes caps one HTTP request body.
const MaxBodyBytes = 4 << 20

// Transport holds the shared transport flags.
type Transport struct {
	HTTP      string // listen address for Streamable HTTP; "" = stdio
	TokenFile string // bearer token file; required for a non-loopback address
	token     string
}

// Flags registers --http and --http-token-file on fs.
func (t *Transport) Flags(fs *flag.FlagSet) {
	fs.StringVar(&t.HTTP, "http", "", "serve Streamable HTTP on `ADDR` (e.g. 127.0.0.1:8765) at /mcp instead of stdio")
	fs.StringVar(&t.TokenFile, "http-token-file", "", "require `FILE`'s bearer token on every HTTP request (needed for non-loopback addresses)")
}

// Validate checks the flags at startup and reads the token file. It
// returns a config.Fatal error on misuse.
func (t *Transport) Validate() error {
	if t.HTTP == "" {
		if t.TokenFile != "" {
			return config.Fatalf("--http-token-file needs --http")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(t.HTTP)
	if err != nil {
		return config.Fatalf("--http %q is not HOST:PORT", t.HTTP)
	}
	if t.TokenFile != "" {
		b, err := os.ReadFile(t.TokenFile)
		if err != nil {
			return config.Fatalf("--http-token-file %s cannot be read", t.TokenFile)
		}
		t.token = strings.TrimSpace(string(b))
		if len(t.token) < 16 {
			return config.Fatalf("--http-token-file %s must hold a token of at least 16 characters", t.TokenFile)
		}
		return nil
	}
	if !isLoopbackHost(host) {
		return config.Fatalf("--http %s is not a loopback address; refusing to listen without --http-token-file", t.HTTP)
	}
	return nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Serve runs s over the chosen transport until ctx ends or the input closes.
// Protocol output goes to stdout only in stdio mode; logs go to log (stderr).
// Serve validates t itself, so a caller that forgot Validate still cannot
// listen on a non-loopback address without a token.
func Serve(ctx context.Context, s *server.MCPServer, t Transport, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	if err := t.Validate(); err != nil {
		return err
	}
	if t.HTTP == "" {
		return serveStdio(ctx, s, stdin(), os.Stdout, logger)
	}
	h := Guard(server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")), t.token)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Addr: t.HTTP, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: MaxHeaderBytes}
	ln, err := net.Listen("tcp", t.HTTP)
	if err != nil {
		return config.Fatalf("cannot listen on %s: %v", t.HTTP, errors.Unwrap(err))
	}
	ln = limitListener(ln, MaxConns)
	logger.Info("serving Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "token", t.token != "")
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveStdio serves s on in and out, each message passing the line gate.
func serveStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, logger *slog.Logger) error {
	std := server.NewStdioServer(s)
	std.SetErrorLogger(log.New(slogWriter{logger}, "", 0))
	w := &lockedWriter{w: out}
	err := std.Listen(ctx, newLineGate(in, w, MaxMessageBytes), w)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Guard wraps an HTTP handler with Bastion's checks: a Host that is a
// loopback name unless a token is set, an Origin (when sent) that is a
// loopback origin, the bearer token when one is configured (compared in
// constant time), and then a body that is read whole within BodyReadTimeout,
// capped at MaxBodyBytes, valid UTF-8 and not a JSON-RPC batch.
func Guard(next http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" && !isLoopbackHost(hostOnly(r.Host)) {
			http.Error(w, "forbidden: Host is not a loopback name", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !isLoopbackHost(u.Hostname()) {
				http.Error(w, "forbidden: Origin is not allowed", http.StatusForbidden)
				return
			}
		}
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || !tokenEqual(got, token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="bastion"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if r.ContentLength > MaxBodyBytes {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if !readBody(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenEqual compares the SHA-256 digests of the two tokens in constant
// time, so neither the content nor the length of the token leaks through
// the time a refusal takes.
func tokenEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	if w.l != nil {
		w.l.Warn(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// NewLogger returns a text slog.Logger on w at the named level
// (debug|info|warn|error).
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
