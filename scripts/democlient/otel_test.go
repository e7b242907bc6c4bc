package main

// Telemetry proven against a real OpenTelemetry Collector: the one
// scripts/otelcol builds from the Collector's own modules (`make otelcol`,
// which `make test` runs first). A missing Collector or server binary
// fails these tests; it never skips them.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/bastion-mcp/bastion/safety/testfs"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// otelBinaries returns the directory of the built servers and the test
// Collector's path: $BASTION_BIN and $BASTION_OTELCOL, else the
// repository's bin/.
func otelBinaries(t testing.TB) (bin, otelcol string) {
	t.Helper()
	bin = os.Getenv("BASTION_BIN")
	if bin == "" {
		bin = filepath.Join("..", "..", "bin")
	}
	otelcol = os.Getenv("BASTION_OTELCOL")
	if otelcol == "" {
		otelcol = filepath.Join(bin, "otelcol-bastion")
	}
	for _, p := range []string{otelcol, filepath.Join(bin, "sweepd"), filepath.Join(bin, "terminald"), filepath.Join(bin, "organizerd")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make build otelcol` first (these tests never skip)", p)
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	oabs, err := filepath.Abs(otelcol)
	if err != nil {
		t.Fatal(err)
	}
	return abs, oabs
}

// collector is one running test Collector writing everything it receives
// to one file.
type collector struct {
	cmd        *exec.Cmd
	out        string
	grpc, http string
	log        *bytes.Buffer
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCollector starts the Collector on two free loopback ports and waits
// until both accept connections.
func startCollector(t testing.TB, path string) *collector {
	t.Helper()
	return startCollectorOn(t, path, freeAddr(t), freeAddr(t))
}

// startCollectorOn starts the Collector on the given gRPC and HTTP
// addresses.
func startCollectorOn(t testing.TB, path, grpcAddr, httpAddr string) *collector {
	t.Helper()
	dir := t.TempDir()
	c := &collector{out: filepath.Join(dir, "otlp.json"), grpc: grpcAddr, http: httpAddr, log: &bytes.Buffer{}}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces: {receivers: [otlp], exporters: [file]}
    metrics: {receivers: [otlp], exporters: [file]}
    logs: {receivers: [otlp], exporters: [file]}
`, c.grpc, c.http, c.out)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(path, "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.kill)
	deadline := time.Now().Add(60 * time.Second)
	for _, a := range []string{c.grpc, c.http} {
		for {
			conn, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Collector did not listen on %s: %s", a, c.log.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c
}

func (c *collector) kill() {
	if c.cmd.Process != nil && c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

// received is what the Collector wrote, flattened.
type received struct {
	spans  []gotSpan
	logs   []gotLog
	points []gotPoint
}

type gotSpan struct {
	Service, Name, TraceID, SpanID, Parent string
	Attrs                                  map[string]string
}

type gotLog struct {
	Service, Body string
	Attrs         map[string]string
}

type gotPoint struct {
	Service, Metric string
	Attrs           map[string]string
	Value           float64 // a sum's value or a histogram's count
}

type otlpAttr struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

func attrMap(as []otlpAttr) map[string]string {
	m := map[string]string{}
	for _, a := range as {
		for _, v := range a.Value {
			m[a.Key] = fmt.Sprint(v)
		}
	}
	return m
}

// readCollector parses the file exporter's OTLP JSON lines.
func readCollector(t testing.TB, path string) received {
	t.Helper()
	var r received
	b, err := os.ReadFile(path)
	if err != nil {
		return r
	}
	type resource struct {
		Attributes []otlpAttr `json:"attributes"`
	}
	type dataPoint struct {
		Attributes []otlpAttr `json:"attributes"`
		AsInt      string     `json:"asInt"`
		AsDouble   float64    `json:"asDouble"`
		Count      string     `json:"count"`
	}
	var line struct {
		ResourceSpans []struct {
			Resource   resource `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					Name         string     `json:"name"`
					TraceID      string     `json:"traceId"`
					SpanID       string     `json:"spanId"`
					ParentSpanID string     `json:"parentSpanId"`
					Attributes   []otlpAttr `json:"attributes"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
		ResourceLogs []struct {
			Resource  resource `json:"resource"`
			ScopeLogs []struct {
				LogRecords []struct {
					Body       map[string]any `json:"body"`
					Attributes []otlpAttr     `json:"attributes"`
				} `json:"logRecords"`
			} `json:"scopeLogs"`
		} `json:"resourceLogs"`
		ResourceMetrics []struct {
			Resource     resource `json:"resource"`
			ScopeMetrics []struct {
				Metrics []struct {
					Name string `json:"name"`
					Sum  *struct {
						DataPoints []dataPoint `json:"dataPoints"`
					} `json:"sum"`
					Histogram *struct {
						DataPoints []dataPoint `json:"dataPoints"`
					} `json:"histogram"`
				} `json:"metrics"`
			} `json:"scopeMetrics"`
		} `json:"resourceMetrics"`
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line.ResourceSpans, line.ResourceLogs, line.ResourceMetrics = nil, nil, nil
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // a line still being written
		}
		for _, rs := range line.ResourceSpans {
			svc := attrMap(rs.Resource.Attributes)["service.name"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, gotSpan{svc, s.Name, s.TraceID, s.SpanID, s.ParentSpanID, attrMap(s.Attributes)})
				}
			}
		}
		for _, rl := range line.ResourceLogs {
			svc := attrMap(rl.Resource.Attributes)["service.name"]
			for _, sl := range rl.ScopeLogs {
				for _, l := range sl.LogRecords {
					body, _ := l.Body["stringValue"].(string)
					r.logs = append(r.logs, gotLog{svc, body, attrMap(l.Attributes)})
				}
			}
		}
		for _, rm := range line.ResourceMetrics {
			svc := attrMap(rm.Resource.Attributes)["service.name"]
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					var dps []dataPoint
					if m.Sum != nil {
						dps = m.Sum.DataPoints
					}
					if m.Histogram != nil {
						dps = m.Histogram.DataPoints
					}
					for _, dp := range dps {
						v := dp.AsDouble
						if dp.AsInt != "" {
							v, _ = strconv.ParseFloat(dp.AsInt, 64)
						}
						if dp.Count != "" {
							v, _ = strconv.ParseFloat(dp.Count, 64)
						}
						r.points = append(r.points, gotPoint{svc, m.Name, attrMap(dp.Attributes), v})
					}
				}
			}
		}
	}
	return r
}

// auditLine is one record of the local audit log, with its hash.
type auditLine struct {
	Seq  int64
	Prev string
	Hash string
}

func readAudit(t testing.TB, path string) []auditLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditLine
	for _, l := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		var r struct {
			Seq  int64  `json:"seq"`
			Prev string `json:"prev"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		sum := sha256.Sum256(l)
		out = append(out, auditLine{r.Seq, r.Prev, hex.EncodeToString(sum[:])})
	}
	return out
}

// demoSandbox makes the demo sandbox without the sandbox-profile policy
// (its go test step measures the machine, not telemetry).
func demoSandbox(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join("..", "make_demo_sandbox.sh")).Output()
	if err != nil {
		t.Fatalf("make_demo_sandbox.sh: %v", err)
	}
	d := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	_ = os.Remove(filepath.Join(d, "dev-policy.toml"))
	return d
}

func buildDemoClient(t testing.TB) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "democlient")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build democlient: %v\n%s", err, out)
	}
	return exe
}

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// TestTelemetryDemoSessionReachesCollector drives the three servers with
// the demo client (a scan and a confirmed reclaim, commands run and
// refused, a plan applied, a move undone and redone), sweepd and
// organizerd over OTLP/HTTP and terminald over OTLP/gRPC, with a
// traceparent in every call's _meta, and checks what the Collector wrote.
func TestTelemetryDemoSessionReachesCollector(t *testing.T) {
	bin, otelcol := otelBinaries(t)
	col := startCollector(t, otelcol)
	sandbox := demoSandbox(t)
	demo := buildDemoClient(t)
	tp := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	for _, run := range []struct{ only, protocol, addr string }{
		{"sweepd,organizerd", "http/protobuf", col.http},
		{"terminald", "grpc", col.grpc},
	} {
		cmd := exec.Command(demo, "-bin", bin, "-sandbox", sandbox, "-only", run.only, "-traceparent", tp)
		cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+run.addr, "OTEL_EXPORTER_OTLP_PROTOCOL="+run.protocol,
			"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=test")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("democlient -only %s: %v\n%s", run.only, err, out)
		}
	}
	local := map[string][]auditLine{}
	nlocal := 0
	for _, svc := range []string{"sweepd", "terminald", "organizerd"} {
		local[svc] = readAudit(t, filepath.Join(sandbox, "state", "audit."+svc+".jsonl"))
		nlocal += len(local[svc])
	}
	var got received
	deadline := time.Now().Add(60 * time.Second)
	for {
		got = readCollector(t, col.out)
		if len(got.logs) >= nlocal && hasMetric(got, "organizerd", "bastion.moves") && hasMetric(got, "terminald", "bastion.commands") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Collector holds %d log records of %d audit records, %d spans, %d points after 60 s", len(got.logs), nlocal, len(got.spans), len(got.points))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Spans: one server span per request, named and attributed after the
	// MCP semantic conventions, continuing the client's trace.
	for svc, tool := range map[string]string{"sweepd": "reclaim", "terminald": "run_command", "organizerd": "move_file"} {
		s := findSpan(got, svc, "tools/call "+tool, nil)
		if s == nil {
			t.Fatalf("%s: no span named %q; spans: %v", svc, "tools/call "+tool, spanNames(got, svc))
		}
		if s.TraceID != clientTraceID || s.Parent != clientSpanID {
			t.Errorf("%s: span %s is in trace %s under %s, not the client's %s under %s", svc, s.Name, s.TraceID, s.Parent, clientTraceID, clientSpanID)
		}
		for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": tool,
			"mcp.protocol.version": "2025-06-18", "gen_ai.operation.name": "execute_tool"} {
			if s.Attrs[k] != want {
				t.Errorf("%s: span %s has %s = %q, want %q", svc, s.Name, k, s.Attrs[k], want)
			}
		}
		for _, k := range []string{"jsonrpc.request.id", "mcp.session.id"} {
			if s.Attrs[k] == "" {
				t.Errorf("%s: span %s has no %s", svc, s.Name, k)
			}
		}
		if findSpan(got, svc, "initialize", nil) == nil || findSpan(got, svc, "tools/list", nil) == nil {
			t.Errorf("%s: no initialize or tools/list span: %v", svc, spanNames(got, svc))
		}
	}
	if s := findSpan(got, "terminald", "tools/call run_command", map[string]string{"error.type": "POLICY_DENIED"}); s == nil {
		t.Error("terminald: no run_command span with error.type POLICY_DENIED (rm -rf / was refused)")
	}
	if s := findSpan(got, "organizerd", "tools/call move_file", map[string]string{"bastion.result.code": "OK"}); s == nil || s.Attrs["error.type"] != "" {
		t.Errorf("organizerd: no successful move_file span with bastion.result.code OK and no error.type: %v", s)
	}
	for _, c := range []struct{ svc, parent, child string }{
		{"terminald", "tools/call run_command", "sandbox.run"},
		{"terminald", "tools/call run_command", "policy.decide"},
		{"sweepd", "tools/call reclaim", "reclaim.delete"},
		{"sweepd", "tools/call reclaim", "approval.ask"},
	} {
		if !hasChild(got, c.svc, c.parent, c.child) {
			t.Errorf("%s: no %s span under a %s span", c.svc, c.child, c.parent)
		}
	}
	if s := findSpan(got, "sweepd", "approval.ask", nil); s != nil && s.Attrs["bastion.answer"] == "" {
		t.Error("sweepd: approval.ask carries no bastion.answer")
	}

	// Metrics.
	for _, m := range []struct {
		svc, name string
		attrs     map[string]string
	}{
		{"terminald", "mcp.server.operation.duration", map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "run_command"}},
		{"terminald", "mcp.server.operation.duration", map[string]string{"gen_ai.tool.name": "run_command", "error.type": "POLICY_DENIED"}},
		{"sweepd", "mcp.server.operation.duration", map[string]string{"gen_ai.tool.name": "scan"}},
		{"organizerd", "mcp.server.operation.duration", map[string]string{"gen_ai.tool.name": "apply_plan"}},
		{"terminald", "bastion.refusals", map[string]string{"error.type": "POLICY_DENIED"}},
		{"terminald", "bastion.commands", map[string]string{"error.type": "OK"}},
		{"sweepd", "bastion.reclaimed.bytes", nil},
		{"sweepd", "bastion.approvals", nil},
		{"organizerd", "bastion.moves", map[string]string{"bastion.op": "applied"}},
		{"organizerd", "bastion.moves", map[string]string{"bastion.op": "undone"}},
		{"organizerd", "bastion.audit.records", nil},
	} {
		if !hasPoint(got, m.svc, m.name, m.attrs) {
			t.Errorf("%s: no %s point with %v", m.svc, m.name, m.attrs)
		}
	}

	// Logs: every local audit record, with seq, prev and hash, forming the
	// same intact chain.
	type key struct {
		svc string
		seq int64
	}
	bySeq := map[key]gotLog{}
	for _, l := range got.logs {
		seq, _ := strconv.ParseInt(l.Attrs["bastion.audit.seq"], 10, 64)
		bySeq[key{l.Service, seq}] = l
	}
	for svc, lines := range local {
		for i, a := range lines {
			l, ok := bySeq[key{svc, a.Seq}]
			if !ok {
				t.Errorf("%s: audit record %d never reached the Collector", svc, a.Seq)
				continue
			}
			if l.Attrs["bastion.audit.hash"] != a.Hash || l.Attrs["bastion.audit.prev"] != a.Prev {
				t.Errorf("%s: audit record %d: the Collector has hash %s prev %s, the file %s and %s", svc, a.Seq, l.Attrs["bastion.audit.hash"], l.Attrs["bastion.audit.prev"], a.Hash, a.Prev)
			}
			if i > 0 && a.Prev != lines[i-1].Hash {
				t.Errorf("%s: the local chain is broken at %d", svc, a.Seq)
			}
			if l.Attrs["bastion.audit.redacted"] == "false" {
				if sum := sha256.Sum256([]byte(l.Body)); hex.EncodeToString(sum[:]) != a.Hash {
					t.Errorf("%s: audit record %d: the log body does not hash to the record's hash", svc, a.Seq)
				}
			}
		}
	}
	t.Logf("%d spans, %d log records, %d metric points", len(got.spans), len(got.logs), len(got.points))
}

func findSpan(r received, svc, name string, attrs map[string]string) *gotSpan {
	for i, s := range r.spans {
		if s.Service == svc && s.Name == name && hasAttrs(s.Attrs, attrs) {
			return &r.spans[i]
		}
	}
	return nil
}

func spanNames(r received, svc string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.spans {
		if s.Service == svc && !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

func hasChild(r received, svc, parent, child string) bool {
	parents := map[string]bool{}
	for _, s := range r.spans {
		if s.Service == svc && s.Name == parent {
			parents[s.SpanID] = true
		}
	}
	for _, s := range r.spans {
		if s.Service == svc && s.Name == child && parents[s.Parent] {
			return true
		}
	}
	return false
}

func hasAttrs(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func hasPoint(r received, svc, name string, attrs map[string]string) bool {
	for _, p := range r.points {
		if p.Service == svc && p.Metric == name && hasAttrs(p.Attrs, attrs) && p.Value > 0 {
			return true
		}
	}
	return false
}

func hasMetric(r received, svc, name string) bool { return hasPoint(r, svc, name, nil) }

// server is one server binary driven directly over stdio.
type server struct {
	cmd    *exec.Cmd
	c      *client.Client
	stderr *testfs.SyncBuffer
}

// startServer starts bin/name on policy with extra environment and
// initializes an MCP session with it.
func startServer(t testing.TB, bin, name, policy string, env ...string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(filepath.Join(bin, name), "--config", policy), stderr: &testfs.SyncBuffer{}}
	s.cmd.Env = append(append(os.Environ(), "BASTION_POLICY_FILE="+policy), env...)
	s.cmd.Stderr = s.stderr
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	s.c = client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "otel-test", Version: "0"}
	if _, err := s.c.Initialize(ctx, init); err != nil {
		t.Fatalf("%s initialize: %v\n%s", name, err, s.stderr.String())
	}
	return s
}

// call makes one tool call and returns its code and how long it took.
func (s *server) call(t testing.TB, tool string, args map[string]any) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	start := time.Now()
	res, err := s.c.CallTool(ctx, req)
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, s.stderr.String())
	}
	var r struct {
		Code string `json:"code"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &r)
	return r.Code, d
}

// stop closes the session and waits for the server to flush and exit.
func (s *server) stop() {
	if s.c != nil {
		_ = s.c.Close()
		s.c = nil
	}
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// rss is the server's resident set in KiB.
func (s *server) rss(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// blackHole accepts connections and never answers: a Collector that is
// hung or far too slow.
func blackHole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// moveBackAndForth moves a file of the organizer's workspace to
// Documents/ and back, n times each way, and returns the slowest call.
func moveBackAndForth(t testing.TB, s *server, n int, onHalf func()) time.Duration {
	t.Helper()
	var slowest time.Duration
	for i := 0; i < n; i++ {
		if i == n/2 && onHalf != nil {
			onHalf()
		}
		src, dest := "report.pdf", "Documents/report.pdf"
		if i%2 == 1 {
			src, dest = dest, src
		}
		code, d := s.call(t, "move_file", map[string]any{"src": src, "dest": dest})
		if code != "OK" {
			t.Fatalf("move %d (%s -> %s): %s\n%s", i, src, dest, code, s.stderr.String())
		}
		slowest = max(slowest, d)
	}
	return slowest
}

// countOutcomes counts the move_file outcome records of the audit log.
func countOutcomes(t testing.TB, path, action string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte(`"kind":"outcome","server":"organizerd","action":"`+action+`"`))
}

// TestTelemetryCollectorDownSlowOrKilledCostsNothing runs organizerd's
// move_file against a Collector that was never started, one that accepts
// and never answers (10,000 calls, memory watched), and one killed
// mid-run: every call answers normally, the local audit log has every
// record, the server says once that telemetry is being dropped, and a
// Collector started again on the killed one's address receives the count
// of what was dropped.
func TestTelemetryCollectorDownSlowOrKilledCostsNothing(t *testing.T) {
	bin, otelcol := otelBinaries(t)
	// A call that waited for the Collector would wait for the exporter's
	// timeout (5 s) or for ever; an ordinary fsync'd move takes
	// milliseconds even on a loaded machine.
	const bound = 3 * time.Second
	calls := 10000
	if testing.Short() {
		calls = 1000
	}
	cases := []struct {
		name  string
		calls int
		addr  func(t testing.TB) (string, func())
	}{
		{"never started", 400, func(t testing.TB) (string, func()) { return freeAddr(t), nil }},
		{"accepts and never answers", calls, func(t testing.TB) (string, func()) { return blackHole(t), nil }},
		{"killed mid-run", 400, func(t testing.TB) (string, func()) {
			col := startCollector(t, otelcol)
			return col.http, col.kill
		}},
	}
	// After the run that killed its Collector, one comes back on the same
	// address and receives bastion.telemetry.dropped, counting what was lost.
	// It comes back only once something was lost: an export still retrying
	// when the Collector returns succeeds and drops nothing, so restarting
	// at once would leave nothing to count (the test failed about one run
	// in six that way). The exporter gives up after ExportTimeout.
	droppedReachesRestarted := func(t *testing.T, s *server, addr string) {
		lost := time.Now().Add(30 * time.Second)
		for !strings.Contains(s.stderr.String(), "telemetry is being dropped") {
			if time.Now().After(lost) {
				t.Fatalf("nothing was dropped in the 30 s after the Collector was killed:\n%s", s.stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		col := startCollectorOn(t, otelcol, freeAddr(t), addr)
		deadline := time.Now().Add(45 * time.Second)
		for !hasMetric(readCollector(t, col.out), "organizerd", "bastion.telemetry.dropped") {
			if time.Now().After(deadline) {
				t.Fatal("the restarted Collector never received bastion.telemetry.dropped")
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sandbox := demoSandbox(t)
			addr, onHalf := c.addr(t)
			s := startServer(t, bin, "organizerd", filepath.Join(sandbox, "policy.toml"),
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+addr, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_METRIC_EXPORT_INTERVAL=500")
			warm := min(1000, c.calls/2)
			slowest := moveBackAndForth(t, s, warm, nil)
			before := s.rss(t)
			slowest = max(slowest, moveBackAndForth(t, s, c.calls-warm, onHalf))
			after := s.rss(t)
			if c.name == "killed mid-run" {
				droppedReachesRestarted(t, s, addr)
			}
			if slowest > bound {
				t.Errorf("the slowest move_file took %v (bound %v)", slowest, bound)
			}
			if grew := after - before; grew > 32<<10 {
				t.Errorf("RSS grew by %d KiB over %d calls (from %d KiB)", grew, c.calls-warm, before)
			}
			start := time.Now()
			s.stop()
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("shutdown took %v; the flush is bounded", d)
			}
			if n := countOutcomes(t, filepath.Join(sandbox, "state", "audit.organizerd.jsonl"), "move_file"); n != c.calls {
				t.Errorf("the local audit log holds %d move_file outcomes, want %d", n, c.calls)
			}
			if n := strings.Count(s.stderr.String(), "telemetry is being dropped"); n != 1 {
				t.Errorf("the server said %d times that telemetry is being dropped, want once:\n%s", n, s.stderr.String())
			}
			t.Logf("%d calls, slowest %v, RSS %d -> %d KiB", c.calls, slowest, before, after)
		})
	}
}

// Planted secrets, each in a form the builtin redaction patterns know.
const (
	secretArg  = "AKIAIOSFODNN7ARGLEAK"                     // an AWS access key id, as a command argument
	secretName = "ghp_FileNameLeak0123456789abcdefghijklmn" // a GitHub token, as a file name
	secretOut  = "AKIAIOSFODNN7OUTLEAKX"                    // an AWS access key id, in a file the command prints
)

// TestTelemetrySecretsNeverReachCollector plants secrets in tool
// arguments, in command output and in file names (listed, moved), and
// finds none of them in what the Collector received.
func TestTelemetrySecretsNeverReachCollector(t *testing.T) {
	bin, otelcol := otelBinaries(t)
	col := startCollector(t, otelcol)
	sandbox := demoSandbox(t)
	policy := filepath.Join(sandbox, "policy.toml")
	jail, inbox := filepath.Join(sandbox, "terminal"), filepath.Join(sandbox, "inbox")
	for _, f := range []struct{ path, body string }{
		{filepath.Join(jail, "creds.txt"), "key=" + secretOut + "\n"},
		{filepath.Join(jail, secretName+".txt"), "x\n"},
		{filepath.Join(inbox, secretName+".pdf"), "%PDF-1.4\n"},
	} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.http, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}
	term := startServer(t, bin, "terminald", policy, env...)
	for _, cmd := range []string{"echo " + secretArg, "cat creds.txt", "ls", "ls " + secretName + ".txt", "cat " + secretName + ".txt"} {
		term.call(t, "run_command", map[string]any{"command": cmd})
	}
	term.stop()
	org := startServer(t, bin, "organizerd", policy, env...)
	if code, _ := org.call(t, "move_file", map[string]any{"src": secretName + ".pdf", "dest": "Documents/" + secretName + ".pdf"}); code != "OK" {
		t.Fatalf("move_file of the secret-named file: %s", code)
	}
	org.call(t, "plan_organize", map[string]any{})
	org.stop()
	// Everything was flushed at shutdown; wait for the file exporter.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := readCollector(t, col.out)
		if hasMetric(got, "organizerd", "bastion.moves") && hasMetric(got, "terminald", "bastion.commands") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Collector never received both servers' metrics")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	b, err := os.ReadFile(col.out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secretArg, secretName, secretOut, "FileNameLeak"} {
		if bytes.Contains(b, []byte(s)) {
			i := bytes.Index(b, []byte(s))
			t.Errorf("the Collector received the secret %q: ...%s...", s, b[max(0, i-200):min(len(b), i+100)])
		}
	}
	if !bytes.Contains(b, []byte("REDACTED")) {
		t.Error("no redaction marker reached the Collector: the test planted nothing the audit log holds")
	}
}

// TestTelemetryHTTPTraceparentHeaderContinuesTrace serves organizerd over
// Streamable HTTP and sends the W3C traceparent as an HTTP header (no
// _meta): the server span continues the caller's trace, as behind a
// gateway that propagates by header.
func TestTelemetryHTTPTraceparentHeaderContinuesTrace(t *testing.T) {
	bin, otelcol := otelBinaries(t)
	col := startCollector(t, otelcol)
	sandbox := demoSandbox(t)
	policy := filepath.Join(sandbox, "policy.toml")
	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(bin, "organizerd"), "--config", policy, "--http", addr)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+col.grpc, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	stderr := &testfs.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	const spanID = "b7ad6b7169203331"
	c, err := client.NewStreamableHttpClient("http://"+addr+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"traceparent": "00-" + clientTraceID + "-" + spanID + "-01"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("organizerd did not listen: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "otel-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "plan_organize"
	if _, err := c.CallTool(ctx, req); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := readCollector(t, col.out)
		if s := findSpan(got, "organizerd", "tools/call plan_organize", nil); s != nil {
			if s.TraceID != clientTraceID || s.Parent != spanID {
				t.Errorf("the span is in trace %s under %s, not the caller's %s under %s", s.TraceID, s.Parent, clientTraceID, spanID)
			}
			if s.Attrs["mcp.session.id"] == "" || s.Attrs["mcp.session.id"] == "stdio" {
				t.Errorf("over HTTP the span's mcp.session.id is %q, want the Mcp-Session-Id", s.Attrs["mcp.session.id"])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tools/call plan_organize span reached the Collector; spans: %v", spanNames(got, "organizerd"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
