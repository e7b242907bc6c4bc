package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/protect"
)

// timed runs op b.N times and also reports the median, which a noisy
// machine disturbs less than the mean.
func timed(b *testing.B, op func() error) { timedAfter(b, nil, op) }

// timedAfter is timed with before run, not timed, ahead of each op.
func timedAfter(b *testing.B, before func(), op func() error) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if before != nil {
			b.StopTimer()
			before()
			b.StartTimer()
		}
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

// BenchmarkRunTrue is Run of /bin/true, cold: a helper started for it in
// new namespaces (view, ruleset, confined forker, limits, watchdog, reap):
// compare with BenchmarkExecTrue from the same run.
func BenchmarkRunTrue(b *testing.B) {
	bx := newBox(b)
	s := bx.spec(b, "true")
	s.Stdout, s.Stderr = io.Discard, io.Discard
	timed(b, func() error { return runOK(s) })
}

// BenchmarkRunTruePrepared is Run of /bin/true with its helper prepared
// beforehand (sandbox.Prepare, then 25 ms not timed), as terminald does
// between an agent's commands: the difference from BenchmarkRunTrue is the
// helper's start-up (namespaces, view, ruleset, confined forker).
func BenchmarkRunTruePrepared(b *testing.B) {
	bx := newBox(b)
	s := bx.spec(b, "true")
	s.Stdout, s.Stderr = io.Discard, io.Discard
	timedAfter(b, func() {
		Prepare(s)
		time.Sleep(25 * time.Millisecond)
	}, func() error { return runOK(s) })
}

// BenchmarkRunTrueLandlockIsolation is Run of /bin/true with landlock
// isolation (no namespaces), cold.
func BenchmarkRunTrueLandlockIsolation(b *testing.B) {
	bx := newBox(b)
	s := bx.spec(b, "true")
	s.Stdout, s.Stderr, s.Isolation = io.Discard, io.Discard, IsolationLandlock
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

// BenchmarkGoTestSandboxVsDirect runs `go test -count=1` of a small module
// in the sandbox profile's setting (namespaces, executable writable trees,
// the Go cache warm) and directly with the same cache, alternating, and
// reports the ratio of the medians (goal <= 1.15).
func BenchmarkGoTestSandboxVsDirect(b *testing.B) {
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		b.Fatalf("go is not installed at %s", goBin)
	}
	bx := newBox(b)
	state := b.TempDir()
	caches, err := Caches(state, bx.jail, []string{"go"}, false)
	if err != nil {
		b.Fatal(err)
	}
	mod := filepath.Join(bx.jail, "mod")
	files := map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.25\n",
		"sum.go":      "package m\n\nfunc Sum(a, b int) int { return a + b }\n",
		"sum_test.go": "package m\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n",
	}
	if err := os.MkdirAll(mod, 0o755); err != nil {
		b.Fatal(err)
	}
	for n, body := range files {
		if err := os.WriteFile(filepath.Join(mod, n), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := append([]string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=" + bx.home, "TMPDIR=" + bx.tmp}, caches.Env...)
	spec := Spec{Path: goBin, Argv: []string{"go", "test", "-count=1", "./..."}, Dir: mod, JailRoot: bx.jail,
		TempDir: bx.tmp, HomeDir: bx.home, WritePaths: caches.Paths, ExecWritable: true, Env: caches.Env,
		PathEnv: "/usr/local/go/bin:/usr/bin:/bin", Timeout: 5 * time.Minute, Stdout: io.Discard, Stderr: &bx.stderr}
	direct := func() error {
		c := exec.Command(goBin, "test", "-count=1", "./...")
		c.Dir, c.Env = mod, env
		return c.Run()
	}
	// Warm the cache once each way.
	if err := direct(); err != nil {
		b.Fatal(err)
	}
	if err := runOK(spec); err != nil {
		b.Fatalf("%v %s", err, bx.stderr.String())
	}
	var in, out []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := runOK(spec); err != nil {
			b.Fatal(err)
		}
		in = append(in, time.Since(t0))
		t0 = time.Now()
		if err := direct(); err != nil {
			b.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(in)
	slices.Sort(out)
	b.ReportMetric(float64(in[len(in)/2].Milliseconds()), "sandbox-p50-ms")
	b.ReportMetric(float64(out[len(out)/2].Milliseconds()), "direct-p50-ms")
	b.ReportMetric(float64(in[len(in)/2])/float64(out[len(out)/2]), "ratio")
}

// BenchmarkProtectedPathsCost measures what the protected-path check
// adds to Run of /bin/true with its helper prepared, as terminald runs
// it: in an empty jail (the jail of terminald's stdio benchmark) and in a
// git repository (hooks, config, info) with 300 source directories. Each
// command runs with and without Spec.Protect, alternating, in the same
// run; it reports both medians and their difference (goal: at most
// 0.5 ms added).
func BenchmarkProtectedPathsCost(b *testing.B) {
	b.Run("empty", func(b *testing.B) { benchProtectedCost(b, 0) })
	b.Run("repo-300-dirs", func(b *testing.B) { benchProtectedCost(b, 300) })
}

func benchProtectedCost(b *testing.B, dirs int) {
	bx := newBox(b)
	if dirs > 0 {
		if out, err := exec.Command("git", "init", "-q", bx.jail).CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
	}
	for i := 0; i < dirs; i++ {
		d := filepath.Join(bx.jail, "src", fmt.Sprintf("pkg%d", i/10), fmt.Sprintf("sub%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "main.go"), []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	plain := bx.spec(b, "true")
	plain.Stdout, plain.Stderr = io.Discard, io.Discard
	guarded := plain
	guarded.Protect, guarded.QuarantineDir = protect.Default(), filepath.Join(b.TempDir(), "quarantine")
	var with, without []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range []Spec{plain, guarded} {
			b.StopTimer()
			Prepare(s)
			time.Sleep(25 * time.Millisecond)
			b.StartTimer()
			t0 := time.Now()
			if err := runOK(s); err != nil {
				b.Fatal(err)
			}
			if s.Protect != nil {
				with = append(with, time.Since(t0))
			} else {
				without = append(without, time.Since(t0))
			}
		}
	}
	b.StopTimer()
	slices.Sort(with)
	slices.Sort(without)
	p50w, p50o := with[len(with)/2], without[len(without)/2]
	b.ReportMetric(float64(p50o.Nanoseconds()), "p50-plain-ns")
	b.ReportMetric(float64(p50w.Nanoseconds()), "p50-protected-ns")
	b.ReportMetric(float64((p50w - p50o).Nanoseconds()), "added-ns")
}
