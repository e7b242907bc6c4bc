package terminal

import (
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkRunTrueInProcess measures run_command("true") through the
// in-process MCP client (policy, fsync'd intent and outcome records,
// Landlock, redaction, private HOME/TMPDIR) against a direct fork/exec of
// true in the same run. terminald's BenchmarkRunTrueOverStdio adds the
// stdio transport.
func BenchmarkRunTrueInProcess(b *testing.B) {
	e := newEnv(b, func(o *Options) { o.Policy.Allow = append(o.Policy.Allow, "true") })
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 200)
	served, direct := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if r := e.run(b, "true"); r.Code != "OK" {
			b.Fatalf("%s", r.text)
		}
		served = append(served, time.Since(t0))
		t0 = time.Now()
		if err := exec.Command(truePath).Run(); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	s, d := p50(served), p50(direct)
	b.ReportMetric(s, "run-p50-ms")
	b.ReportMetric(d, "exec-p50-ms")
	b.ReportMetric(s-d, "overhead-p50-ms")
}
