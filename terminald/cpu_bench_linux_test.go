package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// serverCPUms is the CPU time (user and system, in ms) the process whose
// command line holds marker has used so far, found through /proc.
func serverCPUms(tb testing.TB, marker string) float64 {
	tb.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte(marker)) || !bytes.Contains(cmd, []byte("terminald")) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		return (u + st) * 10 // clock ticks of 10 ms
	}
	tb.Fatalf("no terminald process with %q in its command line", marker)
	return 0
}

// BenchmarkServerCPUPerCall measures the CPU time terminald itself spends
// per call (its own threads, not the helper's or the command's), 1,000
// calls back to back, for run_command("true") and for explain_command, the
// MCP floor of the same server: what a call costs the machine besides the
// sandbox and the command, which matters when calls run in parallel on few
// CPUs (issue 19).
func BenchmarkServerCPUPerCall(b *testing.B) {
	pol := policy(b, b.TempDir(), allow)
	c := startStdio(b, pol)
	for i := 0; i < 20; i++ {
		call(b, c, "run_command", map[string]any{"command": "true"})
	}
	const n = 1000
	per := map[string]float64{}
	for _, tool := range []string{"explain_command", "run_command"} {
		c0 := serverCPUms(b, pol)
		for i := 0; i < n; i++ {
			if r := call(b, c, tool, map[string]any{"command": "true"}); r.Code != "OK" {
				b.Fatalf("%s: %+v", tool, r)
			}
		}
		per[tool] = (serverCPUms(b, pol) - c0) / n
	}
	b.ReportMetric(per["run_command"], "server-cpu-ms/run_command")
	b.ReportMetric(per["explain_command"], "server-cpu-ms/explain_command")
	b.Logf("terminald's own CPU per call: run_command(true) %.2f ms, explain_command %.2f ms (%d calls each)",
		per["run_command"], per["explain_command"], n)
}
