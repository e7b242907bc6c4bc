package telemetry

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestTelemetryIsOffUnlessConfigured(t *testing.T) {
	p, err := config.Telemetry{}.Resolve(env(nil))
	if err != nil || p.On {
		t.Fatalf("an empty policy and environment: %+v, %v", p, err)
	}
	stop, err := Setup(Options{Service: "x", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if Enabled() {
		t.Fatal("telemetry is on with nothing configured")
	}
	// Every entry point is a no-op.
	ctx, span := Start(context.Background(), "step")
	span.Code("POLICY_DENIED")
	span.End()
	Audit(AuditRecord{Seq: 1, Line: []byte(`{}`)})
	Operation("tools/call", "t", "", time.Millisecond)
	Refusal("t", "POLICY_DENIED", "")
	if ctx != context.Background() {
		t.Fatal("Start changed the context while off")
	}
}

func TestEnvironmentWinsOverThePolicy(t *testing.T) {
	pol := config.Telemetry{Enabled: true, Endpoint: "http://policy.example:4318", Protocol: "grpc", Logs: true}
	p, err := pol.Resolve(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env.example:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}))
	if err != nil || !p.On || p.Endpoint != "http://env.example:4318" || p.Protocol != "http/protobuf" {
		t.Fatalf("got %+v, %v", p, err)
	}
	if p.Traces || p.Metrics || !p.Logs {
		t.Fatalf("logs = true alone must send logs only: %+v", p)
	}
	p, _ = pol.Resolve(env(map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env.example:4318"}))
	if p.On {
		t.Fatal("OTEL_SDK_DISABLED=true did not turn telemetry off")
	}
	if !strings.Contains(p.String(), "OTEL_SDK_DISABLED") {
		t.Fatalf("check does not say why: %s", p)
	}
}

func TestUnknownProtocolOrEndpointIsFatal(t *testing.T) {
	for _, e := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
	} {
		if _, err := (config.Telemetry{}).Resolve(env(e)); err == nil {
			t.Errorf("%v was accepted", e)
		}
	}
	if _, err := config.Load(writePolicy(t, "[telemetry]\nenabled = true\nprotocol = \"thrift\"\n")); err == nil || !strings.Contains(err.Error(), "[telemetry] protocol") {
		t.Errorf("[telemetry] protocol = \"thrift\": %v", err)
	}
}

func writePolicy(t *testing.T, body string) string {
	t.Helper()
	p := t.TempDir() + "/policy.toml"
	if err := writeFile(p, body); err != nil {
		t.Fatal(err)
	}
	return p
}

// lockedBuf is a log sink the server's slog writes to.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHungCollectorNeverDelaysTheCaller emits far more spans and audit
// records than the queues hold at a Collector that accepts connections and
// never answers: every call returns at once, the excess is dropped and
// said once, and shutdown ends within its bound.
func TestHungCollectorNeverDelaysTheCaller(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var logs lockedBuf
	stop, err := Setup(Options{Service: "test", Policy: config.Telemetry{Enabled: true, Endpoint: "http://" + ln.Addr().String()},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < 3*QueueSize; i++ {
		_, span := Start(context.Background(), "step")
		span.End()
		Audit(AuditRecord{Seq: int64(i + 1), Kind: "event", Action: "x", Line: []byte(`{"seq":1}`)})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%d spans and records took %v to hand over", 3*QueueSize, d)
	}
	begin := time.Now()
	stop()
	if d := time.Since(begin); d > ShutdownTimeout+2*time.Second {
		t.Errorf("shutdown took %v (bound %v)", d, ShutdownTimeout)
	}
	if n := strings.Count(logs.String(), "telemetry is being dropped"); n != 1 {
		t.Errorf("said %d times that telemetry is dropped, want once: %s", n, logs.String())
	}
	if Enabled() {
		t.Error("still on after shutdown")
	}
}

func TestCheckLineNeverShowsAnEndpointPassword(t *testing.T) {
	p, err := config.Telemetry{}.Resolve(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://team:s3cretpass@collector.example:4318"}))
	if err != nil {
		t.Fatal(err)
	}
	if line := p.String(); strings.Contains(line, "s3cretpass") || !strings.Contains(line, "collector.example") {
		t.Fatalf("check says %q", line)
	}
}
