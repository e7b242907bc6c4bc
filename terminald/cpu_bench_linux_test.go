package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// statCPUms is the CPU time (ms) of a /proc/PID/stat's fields after the
// command name: user and system, and with children also those of the
// children it has reaped.
func statCPUms(f []string, children bool) float64 {
	var ticks float64
	for i, k := range []int{11, 12, 13, 14} {
		if i >= 2 && !children {
			break
		}
		v, _ := strconv.ParseFloat(f[k], 64)
		ticks += v
	}
	return ticks * 10 // clock ticks of 10 ms
}

// procStat returns the fields of /proc/PID/stat after the command name.
func procStat(pid string) ([]string, bool) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(stat)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+2:]), true
}

// treeCPUms is the CPU time (ms) of the terminald process whose command
// line holds marker, of the children it reaped, and of its live children
// (the helpers) with the children they reaped (the commands).
func treeCPUms(tb testing.TB, marker string) float64 {
	tb.Helper()
	pid := serverPID(tb, marker)
	f, _ := procStat(pid)
	total := statCPUms(f, true)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cf, ok := procStat(e.Name()); ok && cf[1] == pid {
			total += statCPUms(cf, true)
		}
	}
	return total
}

// serverPID is the pid of the terminald process whose command line holds
// marker.
func serverPID(tb testing.TB, marker string) string {
	tb.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmd, []byte(marker)) && bytes.Contains(cmd, []byte("terminald")) {
			return e.Name()
		}
	}
	tb.Fatalf("no terminald process with %q in its command line", marker)
	return ""
}

// serverCPUms is the CPU time (user and system, in ms) the process whose
// command line holds marker has used so far, found through /proc.
func serverCPUms(tb testing.TB, marker string) float64 {
	tb.Helper()
	f, ok := procStat(serverPID(tb, marker))
	if !ok {
		tb.Fatal("terminald's /proc/PID/stat could not be read")
	}
	return statCPUms(f, false)
}

// BenchmarkServerCPUPerCall measures the CPU time terminald itself spends
// per call (its own threads, not the helper's or the command's), 1,000
// calls back to back, for run_command("true") and for explain_command, the
// MCP floor of the same server: what a call costs the machine besides the
// sandbox and the command, which matters when calls run in parallel on few
// CPUs (issue 19). It then measures, over 1,000 more run_command calls,
// the CPU of the whole tree (terminald, its helpers, the commands) against
// that of 1,000 fork/execs of /bin/true from the bench in the same run.
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
	// The whole of it: terminald, its helpers and the commands, against
	// the CPU of as many fork/execs of /bin/true from this process.
	c0 := treeCPUms(b, pol)
	for i := 0; i < n; i++ {
		call(b, c, "run_command", map[string]any{"command": "true"})
	}
	tree := (treeCPUms(b, pol) - c0) / n
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &r0)
	for i := 0; i < n; i++ {
		if err := exec.Command(truePath).Run(); err != nil {
			b.Fatal(err)
		}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &r1)
	direct := float64(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / 1e6 / n
	b.ReportMetric(tree, "tree-cpu-ms/run_command")
	b.ReportMetric(direct, "cpu-ms/exec-true")
	b.Logf("CPU per run_command(true) of terminald, its helpers and the commands: %.2f ms; per fork/exec of /bin/true from the bench: %.2f ms; beyond the command: %.2f ms",
		tree, direct, tree-direct)
	b.ReportMetric(per["run_command"], "server-cpu-ms/run_command")
	b.ReportMetric(per["explain_command"], "server-cpu-ms/explain_command")
	b.Logf("terminald's own CPU per call: run_command(true) %.2f ms, explain_command %.2f ms (%d calls each)",
		per["run_command"], per["explain_command"], n)
}
