//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// scaleTree is the cached tree make bench builds (scripts/bench/tree.sh),
// named by $BASTION_BENCH_TREE.
func scaleTree(b *testing.B) string {
	tree := os.Getenv("BASTION_BENCH_TREE")
	if tree == "" {
		b.Fatal("BASTION_BENCH_TREE is not set: run make bench, which builds the 2,000,000-file tree once (scripts/bench/tree.sh)")
	}
	return tree
}

// measured is one external command's wall time, CPU time and peak RSS.
type measured struct {
	wall, cpu time.Duration
	rssKB     int64
}

// runMeasured runs name args with stdout discarded and returns its wall
// time and peak RSS (the kernel's ru_maxrss of the child).
func runMeasured(b *testing.B, name string, args ...string) (measured, string) {
	cmd := exec.Command(name, args...)
	var out strings.Builder
	cmd.Stdout = &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	m := measured{wall: time.Since(t0)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.rssKB = ru.Maxrss
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return m, out.String()
}

func goal(ratio, max float64) string {
	if ratio <= max {
		return fmt.Sprintf("goal <= %.1fx: met", max)
	}
	return fmt.Sprintf("goal <= %.1fx: MISSED", max)
}

// BenchmarkScale2MScan measures, on the cached 2,002,000-file tree, the
// sweepd binary's scan over stdio against `find -prune` + `du -s` of the
// finds and against `gdu -n` (when installed), in the same run, rounds
// alternating, caches warm; it prints the median ratios (goals: <= 1.0x
// and <= 0.5x) and peak RSS of each (sweepd's from VmHWM; goal <= 256 MB).
func BenchmarkScale2MScan(b *testing.B) {
	tree := scaleTree(b)
	pol := filepath.Join(b.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte("[sweep]\nmax_finds = 100000\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	gdu, _ := exec.LookPath("gdu")
	for range b.N {
		c, cmd := mcpkittest.StartStdio(b, bin, cleanEnv(b), "--config", pol, "--root", tree)
		runMeasured(b, "find", tree, "-type", "d", "-name", "node_modules", "-prune", "-print") // warm the caches
		var ours, theirs, gdus, oursCPU, theirsCPU []time.Duration
		var gduRSS int64
		finds := 0
		for range 3 {
			f, out := runMeasured(b, "find", tree, "-type", "d", "-name", "node_modules", "-prune", "-print")
			dirs := strings.Fields(out)
			d, _ := runMeasured(b, "du", append([]string{"-s"}, dirs...)...)
			theirs = append(theirs, f.wall+d.wall)
			theirsCPU = append(theirsCPU, f.cpu+d.cpu)
			c0, t0 := mcpkittest.ProcCPU(b, cmd.Process.Pid), time.Now()
			r := mcpkittest.Call(b, c, "scan", map[string]any{})
			ours = append(ours, time.Since(t0))
			oursCPU = append(oursCPU, mcpkittest.ProcCPU(b, cmd.Process.Pid)-c0)
			var got struct {
				Finds []struct{ Path string } `json:"finds"`
			}
			r.DecodeDetail(b, &got)
			if r.Code != "OK" || len(got.Finds) != len(dirs) {
				b.Fatalf("scan: %s, %d finds; find saw %d", r.Code, len(got.Finds), len(dirs))
			}
			finds = len(dirs)
			if gdu != "" {
				g, _ := runMeasured(b, gdu, "-n", tree)
				gdus = append(gdus, g.wall)
				gduRSS = max(gduRSS, g.rssKB)
			}
		}
		rss := mcpkittest.ProcStatus(b, cmd.Process.Pid, "VmHWM")
		mo, mt := mcpkittest.Median(ours), mcpkittest.Median(theirs)
		fmt.Printf("scale scan: %s, %d finds: sweepd %v, find+du %v, ratio %.2fx (%s)\n",
			tree, finds, mo.Round(time.Millisecond), mt.Round(time.Millisecond), float64(mo)/float64(mt), goal(float64(mo)/float64(mt), 1.0))
		fmt.Printf("scale scan: CPU time (user+system, load-independent): sweepd %v, find+du %v\n", mcpkittest.Median(oursCPU), mcpkittest.Median(theirsCPU))
		if gdu != "" {
			mg := mcpkittest.Median(gdus)
			fmt.Printf("scale scan: gdu -n %v, ratio %.2fx (%s); gdu peak RSS %d MB\n",
				mg.Round(time.Millisecond), float64(mo)/float64(mg), goal(float64(mo)/float64(mg), 0.5), gduRSS/1024)
			b.ReportMetric(float64(mo)/float64(mg), "gdu-ratio")
		} else {
			fmt.Println("scale scan: gdu -n skipped (gdu not installed; apt-get install gdu)")
		}
		fmt.Printf("scale scan: sweepd peak RSS (VmHWM) %d MB (goal <= 256 MB: %s)\n", rss/1024, map[bool]string{true: "met", false: "MISSED"}[rss <= 256*1024])
		b.ReportMetric(float64(mo)/float64(mt), "find-du-ratio")
		b.ReportMetric(float64(rss)/1024, "peak-MB")
	}
}
