//go:build linux

package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// scaleCap is the [radar] summary_max_entries the scale bench sets: past
// the 2,045,025 entries (2,002,000 files) of make bench's tree.
const scaleCap = 4_000_000

// bareWalk counts the files and the directories (root aside) under root
// with filepath.WalkDir.
func bareWalk(b *testing.B, root string) (files, dirs int) {
	if err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs++
		} else if err == nil {
			files++
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return files, dirs - 1
}

// BenchmarkScale2MSummary measures, on the cached 2,002,000-file tree
// ($BASTION_BENCH_TREE, built by make bench), the organizerd binary's
// get_context_summary over stdio, with [radar] summary_max_entries raised
// past the tree, against a bare filepath.WalkDir in the same run, rounds
// alternating, caches warm. Each summary must be whole (not truncated,
// the walk's file count) and send progress notifications. It prints the
// median ratio (goal <= 1.5x) and organizerd's peak RSS (VmHWM; goal <= 256 MB).
func BenchmarkScale2MSummary(b *testing.B) {
	tree := os.Getenv("BASTION_BENCH_TREE")
	if tree == "" {
		b.Fatal("BASTION_BENCH_TREE is not set: run make bench, which builds the 2,000,000-file tree once (scripts/bench/tree.sh)")
	}
	dir := b.TempDir()
	pol := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("[radar]\nsummary_max_entries = %d\n", scaleCap)), 0o644); err != nil {
		b.Fatal(err)
	}
	env := cleanEnv(b, "BASTION_WORKSPACE_ROOT="+tree, "BASTION_JOURNAL="+filepath.Join(dir, "journal"))
	for range b.N {
		c, cmd := mcpkittest.StartStdio(b, bin, env, "--config", pol)
		var progress atomic.Int64
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				progress.Add(1)
			}
		})
		bareWalk(b, tree) // warm the caches
		var walks, sums, walksCPU, sumsCPU []time.Duration
		files, dirs := 0, 0
		for round := range 3 {
			w0, t0 := selfCPU(b), time.Now()
			files, dirs = bareWalk(b, tree)
			walks = append(walks, time.Since(t0))
			walksCPU = append(walksCPU, selfCPU(b)-w0)
			var req mcp.CallToolRequest
			req.Params.Name = "get_context_summary"
			req.Params.Arguments = map[string]any{}
			req.Params.Meta = &mcp.Meta{ProgressToken: "scale-" + strconv.Itoa(round)}
			c1, t1 := mcpkittest.ProcCPU(b, cmd.Process.Pid), time.Now()
			res, err := c.CallTool(context.Background(), req)
			sums = append(sums, time.Since(t1))
			sumsCPU = append(sumsCPU, mcpkittest.ProcCPU(b, cmd.Process.Pid)-c1)
			if err != nil {
				b.Fatal(err)
			}
			r := mcpkittest.Parse(b, res)
			var got struct {
				Summaries []struct {
					Files     int  `json:"files"`
					Truncated bool `json:"truncated"`
				} `json:"summaries"`
			}
			r.DecodeDetail(b, &got)
			if r.Code != "OK" || len(got.Summaries) != 1 || got.Summaries[0].Truncated || got.Summaries[0].Files != files {
				b.Fatalf("summary: %s %+v; the walk saw %d files", r.Code, got.Summaries, files)
			}
		}
		rss := mcpkittest.ProcStatus(b, cmd.Process.Pid, "VmHWM")
		// Without the policy the default cap (2,000,000 entries) stops
		// short of a tree larger than it, and says so.
		dc, _ := mcpkittest.StartStdio(b, bin, cleanEnv(b, "BASTION_WORKSPACE_ROOT="+tree, "BASTION_JOURNAL="+filepath.Join(dir, "journal-default")))
		def := mcpkittest.Call(b, dc, "get_context_summary", map[string]any{})
		if over := files+dirs > 2_000_000; over != (def.Code == "OUTPUT_TRUNCATED") || over != strings.Contains(def.Reason, "partial") {
			b.Fatalf("default cap, %d entries: %s %.200s", files+dirs, def.Code, def.Reason)
		}
		dc.Close()
		fmt.Printf("scale summary: default cap: %s, %q\n", def.Code, strings.SplitN(def.Reason, "\n", 2)[0])
		mw, ms := mcpkittest.Median(walks), mcpkittest.Median(sums)
		ratio := float64(ms) / float64(mw)
		fmt.Printf("scale summary: %d files, cap %d: get_context_summary %v, bare walk %v, ratio %.2fx (goal <= 1.5x: %s); %d progress notifications in 3 calls\n",
			files, scaleCap, ms.Round(time.Millisecond), mw.Round(time.Millisecond), ratio, metOr(ratio <= 1.5), progress.Load())
		fmt.Printf("scale summary: CPU time (user+system, load-independent): get_context_summary %v, bare walk %v, ratio %.2fx\n",
			mcpkittest.Median(sumsCPU), mcpkittest.Median(walksCPU), float64(mcpkittest.Median(sumsCPU))/float64(mcpkittest.Median(walksCPU)))
		fmt.Printf("scale summary: organizerd peak RSS (VmHWM) %d MB (goal <= 256 MB: %s)\n", rss/1024, metOr(rss <= 256*1024))
		b.ReportMetric(ratio, "summary/walk")
		b.ReportMetric(float64(rss)/1024, "peak-MB")
	}
}

// selfCPU is this process's user+system CPU time.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func metOr(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
