package mcpkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/result"
)

// The files in testdata/exchanges are recorded protocol exchanges: what a
// client sends an mcpkit server and the exact JSON-RPC messages it gets
// back, one per line, in order. Lines starting "> " are the client's,
// "< " the server's, "#" a comment. TestRecordedExchanges replays each
// file's client lines against exchangeServer and compares the whole
// transcript with the file; `go test -run TestRecordedExchanges -update`
// rewrites the server lines. To record a new exchange, write a file with
// a comment and the client lines only, and run with -update.
//
// The server's messages are those a transport writes (json.Marshal of
// each message), with one rewrite: every duration_ms is 0, as it measures
// time. Notifications a request causes come before its response, in the
// order the server sent them.

// exchangesRequired are the exchanges every version of mcpkit must keep.
var exchangesRequired = []string{"refusal", "panic", "bad_arguments", "progress", "log"}

// exchangeServer is a small server built with NewTool and Handle the way
// Bastion's servers are.
func exchangeServer() *server.MCPServer {
	log := slog.New(slog.DiscardHandler)
	s := NewServer("exchange-demo", "1", "A server for recorded exchanges.")
	s.AddTool(NewTool("greet", "Greet someone by name.", Annotations{Title: "Greet", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)),
		Handle("greet", log, func(_ context.Context, _ mcp.CallToolRequest, a struct {
			Name string `json:"name"`
		}) result.OperationResult {
			return result.Success("", "greeted "+a.Name, map[string]string{"greeting": "Hello, " + a.Name + "."}, time.Time{})
		}))
	s.AddTool(NewTool("delete_everything", "Refuses, always.", Annotations{Title: "Delete everything", Destructive: true}, noArgsSchema),
		Handle("delete_everything", log, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			return result.With("", result.PolicyDenied, "this server never deletes everything; name the files to delete instead",
				map[string]string{"rule": "no-mass-delete"}, time.Time{})
		}))
	s.AddTool(NewTool("crash", "Panics.", Annotations{Title: "Crash"}, noArgsSchema),
		Handle("crash", log, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			panic("index out of range [3] with length 3")
		}))
	s.AddTool(NewTool("count", "Count to a number, reporting progress.", Annotations{Title: "Count", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{"to":{"type":"integer"}},"required":["to"],"additionalProperties":false}`)),
		Handle("count", log, func(ctx context.Context, req mcp.CallToolRequest, a struct {
			To int `json:"to"`
		}) result.OperationResult {
			progress := Progress(ctx, req)
			for i := 1; i <= a.To; i++ {
				progress(float64(i), float64(a.To), fmt.Sprintf("counted %d of %d", i, a.To))
			}
			return result.Success("", fmt.Sprintf("counted to %d", a.To), nil, time.Time{})
		}))
	return s
}

// exchangeSession is the client's session: it keeps the notifications the
// server sends, and the log level the client set (mcp-go's stdio default,
// "error", until then).
type exchangeSession struct {
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
	level       atomic.Value
}

func newExchangeSession() *exchangeSession {
	s := &exchangeSession{notes: make(chan mcp.JSONRPCNotification, 64)}
	s.level.Store(mcp.LoggingLevelError)
	return s
}

func (s *exchangeSession) SessionID() string                                   { return "exchange" }
func (s *exchangeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *exchangeSession) Initialize()                                         { s.initialized.Store(true) }
func (s *exchangeSession) Initialized() bool                                   { return s.initialized.Load() }
func (s *exchangeSession) SetLogLevel(l mcp.LoggingLevel)                      { s.level.Store(l) }
func (s *exchangeSession) GetLogLevel() mcp.LoggingLevel                       { return s.level.Load().(mcp.LoggingLevel) }

// durationMS matches a duration_ms value, also inside the text content
// (where the result's JSON is a string, its quotes escaped).
var durationMS = regexp.MustCompile(`(\\?"duration_ms\\?":)-?[0-9][0-9.eE+-]*`)

// replay runs the client lines of an exchange file against a fresh
// exchangeServer and returns the file as it should read: comments and
// client lines kept, each followed by the server's messages.
func replay(t *testing.T, file []byte) []byte {
	t.Helper()
	srv := exchangeServer()
	sess := newExchangeSession()
	ctx := srv.WithContext(context.Background(), sess)
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "< ") {
			continue // a server line: replaced by what the server says now
		}
		out.WriteString(line + "\n")
		msg, ok := strings.CutPrefix(line, "> ")
		if !ok {
			continue
		}
		if !json.Valid([]byte(msg)) {
			t.Fatalf("client line is not JSON: %s", msg)
		}
		resp := srv.HandleMessage(ctx, json.RawMessage(msg))
		for len(sess.notes) > 0 {
			writeServerLine(t, &out, <-sess.notes)
		}
		if resp != nil {
			writeServerLine(t, &out, resp)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeServerLine(t *testing.T, out *bytes.Buffer, msg any) {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatalf("the server's message cannot be marshalled: %v", err)
	}
	out.WriteString("< " + string(durationMS.ReplaceAll(b, []byte("${1}0"))) + "\n")
}

func TestRecordedExchanges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "exchanges", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range exchangesRequired {
		if _, err := os.Stat(filepath.Join("testdata", "exchanges", name+".txt")); err != nil {
			t.Errorf("the recorded exchange %s is missing: %v", name, err)
		}
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mcpkittest.Golden(t, path, replay(t, file))
		})
	}
}
