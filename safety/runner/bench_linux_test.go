package runner

import (
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkRunnerRunPwd times Runner.Run("pwd"), the whole pipeline but
// MCP (policy, working directory, audit intent and outcome, sandbox, the
// pair and helper kept for the next run), against a fork/exec of
// /bin/pwd in the same loop, calls back to back and 5 ms apart. It
// reports the p50 of each and the difference: what terminald adds before
// MCP's own cost.
func BenchmarkRunnerRunPwd(b *testing.B) {
	f := newFixture(b)
	pwdPath, err := exec.LookPath("pwd")
	if err != nil {
		b.Fatal(err)
	}
	for _, gap := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(gap.String(), func(b *testing.B) {
			var ran, direct []time.Duration
			n := max(b.N, 100)
			for i := 0; i < n; i++ {
				time.Sleep(gap)
				t0 := time.Now()
				if out := f.run("pwd"); out.Err != nil || out.ExitCode != 0 {
					b.Fatalf("run: %+v", out)
				}
				ran = append(ran, time.Since(t0))
				t0 = time.Now()
				if err := exec.Command(pwdPath).Run(); err != nil {
					b.Fatal(err)
				}
				direct = append(direct, time.Since(t0))
			}
			p50 := func(d []time.Duration) float64 {
				sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
				return float64(d[len(d)/2].Microseconds()) / 1000
			}
			r, d := p50(ran), p50(direct)
			b.ReportMetric(r, "run-p50-ms")
			b.ReportMetric(d, "exec-p50-ms")
			b.ReportMetric(r-d, "overhead-p50-ms")
		})
	}
}
