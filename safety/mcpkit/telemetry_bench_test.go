package mcpkit

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// BenchmarkTelemetryPerCall is the CPU a tools/call costs in-process, with
// telemetry off and on (every signal, to a Collector that never answers, so
// that only the caller's side is measured), with the two audit records
// a real call hands over: what telemetry adds to a call, independent of
// the machine's load.
func BenchmarkTelemetryPerCall(b *testing.B) {
	type noArgs struct{}
	tool := server.ServerTool{
		Tool: NewTool("noop", "Does nothing.", Annotations{ReadOnly: true, Idempotent: true},
			json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)),
		Handler: Handle("noop", nil, func(context.Context, mcp.CallToolRequest, noArgs) result.OperationResult {
			return result.Success("noop", "done", nil, time.Time{})
		}),
	}
	srv := NewServer("bench", "1", "bench")
	srv.AddTools(tool)
	call := json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"noop","arguments":{},` +
		`"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`)
	line := []byte(`{"seq":13,"time":"2026-12-02T02:34:41.652538696Z","kind":"outcome","server":"organizerd","action":"move_file","intent":"i-12","code":"OK","fields":{"moved":1},"prev":"f6e0a4a85604d9591ed6dda67b07767aa632d133bcdb29665c529a9ebd9057ff"}`)
	run := func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			srv.HandleMessage(ctx, call)
			for k := 0; k < 2; k++ {
				telemetry.Audit(telemetry.AuditRecord{Seq: int64(i), Kind: "outcome", Action: "move_file", Code: "OK", Line: line})
			}
		}
		b.StopTimer()
	}
	b.Run("off", run)
	b.Run("on", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		stop, err := telemetry.Setup(telemetry.Options{Service: "bench", Policy: config.Telemetry{Enabled: true, Endpoint: "http://" + ln.Addr().String()},
			Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		run(b)
		stop()
	})
}
