package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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

// BenchmarkReadOutputWithDataWaiting times read_output over stdio of a
// session whose output (about 4 KiB) is already there (goal: p50 < 1 ms).
func BenchmarkReadOutputWithDataWaiting(b *testing.B) {
	jail := b.TempDir()
	if err := os.WriteFile(filepath.Join(jail, "log.txt"), bytes.Repeat([]byte("a line of build output\n"), 200), 0o644); err != nil {
		b.Fatal(err)
	}
	c := startStdio(b, policy(b, jail, sessionAllow))
	r := call(b, c, "run_command", map[string]any{"command": "tail -n 1000 -f log.txt", "background": true, "wait_ms": 2000})
	s, _ := r.Detail["session"].(map[string]any)
	id, _ := s["session_id"].(string)
	if r.Code != "OK" || id == "" {
		b.Fatalf("start: %+v", r)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if rr := call(b, c, "read_output", map[string]any{"session_id": id}); len(rr.Detail["output"].(string)) >= 4000 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the output never came")
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := max(b.N, 500)
	reads, lists := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		rr := call(b, c, "read_output", map[string]any{"session_id": id})
		reads = append(reads, time.Since(t0))
		if rr.Code != "OK" {
			b.Fatalf("read_output: %+v", rr)
		}
		// The floor: a call that does next to nothing, over the same stdio.
		t0 = time.Now()
		call(b, c, "list_sessions", map[string]any{})
		lists = append(lists, time.Since(t0))
	}
	b.StopTimer()
	p, l := p50ms(reads), p50ms(lists)
	b.ReportMetric(p, "read-output-p50-ms")
	b.ReportMetric(l, "list-sessions-p50-ms")
	b.Logf("read_output with ~4 KiB waiting, over stdio: p50 %.3f ms (goal < 1 ms); list_sessions (the transport's floor) p50 %.3f ms; %d samples", p, l, n)
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
