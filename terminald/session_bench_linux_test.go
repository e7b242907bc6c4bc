package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// sessionAllow is the allowlist of the session benchmarks: tail -f is a
// long-running allowed program, true the foreground baseline, cat the
// output producer.
const sessionAllow = "[terminal.allowlist]\ncommands = [\"true\", \"tail\", \"cat\"]\n"

// p50ms is the median of d in milliseconds.
func p50ms(d []time.Duration) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Microseconds()) / 1000
}

// BenchmarkSessionStartVsRunTrue times, over stdio and paced 25 ms apart
// (as an agent's calls arrive), starting a session (run_command
// background: true of tail -f, answered once the command has started)
// against a foreground run_command("true") in the same run (goal: ratio
// <= 1.2); the session is stopped between samples, untimed.
func BenchmarkSessionStartVsRunTrue(b *testing.B) {
	jail := b.TempDir()
	if err := os.WriteFile(filepath.Join(jail, "log.txt"), []byte("line\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	c := startStdio(b, policy(b, jail, sessionAllow))
	n := max(b.N, 100)
	starts, fg := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		time.Sleep(25 * time.Millisecond)
		t0 := time.Now()
		r := call(b, c, "run_command", map[string]any{"command": "tail -f log.txt", "background": true})
		starts = append(starts, time.Since(t0))
		if r.Code != "OK" {
			b.Fatalf("session start: %+v", r)
		}
		s, _ := r.Detail["session"].(map[string]any)
		id, _ := s["session_id"].(string)
		if st := call(b, c, "stop_session", map[string]any{"session_id": id}); st.Code != "OK" {
			b.Fatalf("stop: %+v", st)
		}
		time.Sleep(25 * time.Millisecond)
		t0 = time.Now()
		if r := call(b, c, "run_command", map[string]any{"command": "true"}); r.Code != "OK" {
			b.Fatalf("true: %+v", r)
		}
		fg = append(fg, time.Since(t0))
	}
	b.StopTimer()
	sp, fp := p50ms(starts), p50ms(fg)
	b.ReportMetric(sp, "session-start-p50-ms")
	b.ReportMetric(fp, "run-true-p50-ms")
	b.ReportMetric(sp/fp, "start-vs-run-true")
	b.Logf("session start p50 %.2f ms; foreground run_command(true) p50 %.2f ms; ratio %.2f (goal <= 1.2), %d samples", sp, fp, sp/fp, n)
}

// wire is a bare stdio connection to the server: JSON-RPC lines written
// and read with nothing decoded while timed, so the time is the server's
// answer and the pipe's, whatever a client then spends parsing it.
type wire struct {
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

// startWire starts the binary with policy pol as a stdio server and
// initializes it over a wire.
func startWire(b *testing.B, pol string) *wire {
	b.Helper()
	cmd := exec.Command(bin, "--config", pol, "--log-level", "warn")
	cmd.Env = cleanEnv(b, "XDG_STATE_HOME="+b.TempDir())
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	w := &wire{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	w.send(b, "initialize", map[string]any{"protocolVersion": mcpkittest.ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "wire", "version": "1"}})
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return w
}

// send writes one request and returns its answer's line and the time from
// writing the request to reading the whole answer.
func (w *wire) send(b *testing.B, method string, params any) ([]byte, time.Duration) {
	b.Helper()
	w.id++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": w.id, "method": method, "params": params})
	if err != nil {
		b.Fatal(err)
	}
	answer := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,`, w.id)
	t0 := time.Now()
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		b.Fatal(err)
	}
	for {
		line, err := w.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: %v", method, err)
		}
		if bytes.HasPrefix(line, answer) {
			return line, time.Since(t0)
		}
	}
}

// call calls a tool over the wire, timed; the answer is checked (as
// mcpkittest.Call checks it) after the clock stops.
func (w *wire) call(b *testing.B, name string, args map[string]any) (toolResult, time.Duration) {
	b.Helper()
	line, took := w.send(b, "tools/call", map[string]any{"name": name, "arguments": args})
	var msg struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(line, &msg); err != nil || msg.Result == nil {
		b.Fatalf("%s: not a tool result: %v\n%s", name, err, line)
	}
	r := toolResult{Result: mcpkittest.Parse(b, msg.Result)}
	r.DecodeDetail(b, &r.Detail)
	return r, took
}

// timedCall calls a tool and times its round trip as the mcp-go client
// returns it (the request written, the answer read and parsed by the
// client); the test's own checks of the answer (mcpkittest.Parse, which
// decodes it four more times) run after the clock stops.
func timedCall(b *testing.B, c *client.Client, name string, args map[string]any) (toolResult, time.Duration) {
	b.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	t0 := time.Now()
	res, err := c.CallTool(context.Background(), req)
	took := time.Since(t0)
	if err != nil {
		b.Fatalf("CallTool %s: %v", name, err)
	}
	r := toolResult{Result: mcpkittest.Parse(b, res)}
	r.DecodeDetail(b, &r.Detail)
	return r, took
}

// BenchmarkReadOutputWithDataWaiting times read_output over stdio of a
// session whose output (about 4.6 KB) is already there (goal: p50 < 1
// ms), with list_sessions, a call that does next to nothing, as the floor,
// twice: through the mcp-go client (the time includes its parsing of the
// answer, which carries the output twice: as text and as structured
// content), and over a bare wire (the server's answer and the pipe only).
// The test's own checks of each answer run untimed.
func BenchmarkReadOutputWithDataWaiting(b *testing.B) {
	jail := b.TempDir()
	if err := os.WriteFile(filepath.Join(jail, "log.txt"), bytes.Repeat([]byte("a line of build output\n"), 200), 0o644); err != nil {
		b.Fatal(err)
	}
	pol := policy(b, jail, sessionAllow)
	c := startStdio(b, pol)
	w := startWire(b, pol)
	viaClient := func(name string, args map[string]any) (toolResult, time.Duration) { return timedCall(b, c, name, args) }
	viaWire := func(name string, args map[string]any) (toolResult, time.Duration) { return w.call(b, name, args) }
	var ids [2]string
	for k, call := range []func(string, map[string]any) (toolResult, time.Duration){viaClient, viaWire} {
		r, _ := call("run_command", map[string]any{"command": "tail -n 1000 -f log.txt", "background": true, "wait_ms": 2000})
		s, _ := r.Detail["session"].(map[string]any)
		id, _ := s["session_id"].(string)
		if r.Code != "OK" || id == "" {
			b.Fatalf("start: %+v", r)
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			if rr, _ := call("read_output", map[string]any{"session_id": id}); len(rr.Detail["output"].(string)) >= 4000 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the output never came")
			}
			time.Sleep(50 * time.Millisecond)
		}
		ids[k] = id
	}
	n := max(b.N, 500)
	var reads, lists [2][]time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		for k, call := range []func(string, map[string]any) (toolResult, time.Duration){viaClient, viaWire} {
			rr, took := call("read_output", map[string]any{"session_id": ids[k]})
			reads[k] = append(reads[k], took)
			if rr.Code != "OK" || len(rr.Detail["output"].(string)) < 4000 {
				b.Fatalf("read_output: %+v", rr)
			}
			_, took = call("list_sessions", map[string]any{})
			lists[k] = append(lists[k], took)
		}
	}
	b.StopTimer()
	p, l, pw, lw := p50ms(reads[0]), p50ms(lists[0]), p50ms(reads[1]), p50ms(lists[1])
	b.ReportMetric(p, "read-output-p50-ms")
	b.ReportMetric(l, "list-sessions-p50-ms")
	b.ReportMetric(pw, "read-output-wire-p50-ms")
	b.ReportMetric(lw, "list-sessions-wire-p50-ms")
	b.Logf("read_output with ~4.6 KB waiting, over stdio (goal p50 < 1 ms): mcp-go client p50 %.3f ms (list_sessions, the floor, %.3f ms); bare wire p50 %.3f ms (list_sessions %.3f ms); %d samples each", p, l, pw, lw, n)
}

// BenchmarkSession50MBOutputServerRSS has a session print 50 MB and
// reports the server's peak resident memory (goal: under 64 MB): the
// output streams through the redactor into a ring of max_output_bytes.
func BenchmarkSession50MBOutputServerRSS(b *testing.B) {
	jail := b.TempDir()
	line := []byte("2026-12-02T00:00:00Z INFO request served path=/api/items status=200 bytes=5120 duration=3ms\n")
	big := bytes.Repeat(line, 50<<20/len(line))
	if err := os.WriteFile(filepath.Join(jail, "big.txt"), big, 0o644); err != nil {
		b.Fatal(err)
	}
	c, cmd := mcpkittest.StartStdio(b, bin, cleanEnv(b, "XDG_STATE_HOME="+b.TempDir()), "--config", policy(b, jail, sessionAllow), "--log-level", "warn")
	b.ResetTimer()
	t0 := time.Now()
	r := call(b, c, "run_command", map[string]any{"command": "cat big.txt", "background": true})
	s, _ := r.Detail["session"].(map[string]any)
	id, _ := s["session_id"].(string)
	if r.Code != "OK" || id == "" {
		b.Fatalf("start: %+v", r)
	}
	var info map[string]any
	for deadline := time.Now().Add(5 * time.Minute); ; {
		rr := call(b, c, "read_output", map[string]any{"session_id": id, "wait_ms": 1000})
		info, _ = rr.Detail["session"].(map[string]any)
		if info["ended"] != nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the session did not end")
		}
	}
	took := time.Since(t0)
	b.StopTimer()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	var hwm float64
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			hwm = kb / 1024
		}
	}
	b.ReportMetric(hwm, "server-peak-rss-MB")
	b.ReportMetric(took.Seconds(), "50MB-s")
	b.Logf("a session printing 50 MB: server peak RSS %.1f MB (goal < 64 MB), %v to stream it, output_bytes %v", hwm, took.Round(time.Millisecond), info["output_bytes"])
}
