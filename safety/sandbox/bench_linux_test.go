package sandbox

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// timed runs op b.N times and also reports the median, which a noisy
// machine disturbs less than the mean.
func timed(b *testing.B, op func() error) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

func runOK(s Spec) error {
	out, err := Run(context.Background(), s)
	if err == nil && out.ExitCode != 0 {
		return fmt.Errorf("exit %d", out.ExitCode)
	}
	return err
}

// BenchmarkRunTrue is Run of /bin/true under required Landlock with the
// network denied (ruleset build, locked thread, seccomp filter, group kill,
// reap, pipe drain): compare with BenchmarkExecTrue from the same run.
func BenchmarkRunTrue(b *testing.B) {
	bx := newBox(b)
	s := bx.spec(b, "true")
	s.Stdout, s.Stderr = io.Discard, io.Discard
	timed(b, func() error { return runOK(s) })
}

// BenchmarkRunTrueUnconfined is the same Run with landlock = "off", to
// separate the cost of confinement from the cost of the process handling.
func BenchmarkRunTrueUnconfined(b *testing.B) {
	bx := newBox(b)
	s := bx.spec(b, "true")
	s.Stdout, s.Stderr, s.Landlock = io.Discard, io.Discard, ModeOff
	timed(b, func() error { return runOK(s) })
}

// BenchmarkExecTrue is the baseline: a plain exec.Command("/bin/true").Run().
func BenchmarkExecTrue(b *testing.B) {
	path := lookPath(b, "true")
	timed(b, func() error { return exec.Command(path).Run() })
}
