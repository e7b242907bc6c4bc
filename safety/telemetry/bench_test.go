package telemetry

import (
	"context"
	"net"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
)

// BenchmarkAuditAndSpan is what one audited tool call hands to telemetry
// (a server span, two audit records), with an exporter that never
// answers, so only the caller's side is measured.
func BenchmarkAuditAndSpan(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	stop, err := Setup(Options{Service: "bench", Policy: config.Telemetry{Enabled: true, Endpoint: "http://" + ln.Addr().String()}, Getenv: env(nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	line := []byte(`{"seq":13,"time":"2026-12-02T02:34:41.652538696Z","kind":"outcome","server":"terminald","action":"run_command","intent":"i-12","code":"OK","fields":{"confinement":"namespaces(user,mnt,pid,net,ipc,uts) + landlock-abi7: fs+scope; seccomp (socket families: unix,inet,inet6,netlink-route); network: own loopback only; userns counters capped; no capabilities; rlimits+watchdog; memory: memcg v1; runs as host uid 65534","duration_ms":180,"exit_code":0,"neutralised":0,"redactions":0,"stderr_bytes":0,"stdout_bytes":12,"truncated":false},"prev":"f6e0a4a85604d9591ed6dda67b07767aa632d133bcdb29665c529a9ebd9057ff"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, span := Start(context.Background(), "step")
		span.End()
		for k := 0; k < 2; k++ {
			Audit(AuditRecord{Seq: int64(i), Kind: "outcome", Action: "run_command", Code: "OK", Fields: map[string]any{"exit_code": 0}, Line: line})
		}
	}
	b.StopTimer()
}
