//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// applyFiles is how many files BenchmarkApply10kVsBaseline's plan moves.
const applyFiles = 10000

// applier is one organizerd binary under measurement, with its own
// workspace of applyFiles files at the top, and the wall time of each
// plan_organize and apply_plan.
type applier struct {
	name          string
	c             *client.Client
	plans, applys []time.Duration
}

// startApplier starts bin over stdio on a fresh workspace of n files
// (modified an hour ago, so none is "recent"), journal and audit log on
// the same disk.
func startApplier(b *testing.B, bin, name string, n int) *applier {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	old := time.Now().Add(-time.Hour)
	for i := range n {
		p := filepath.Join(ws, fmt.Sprintf("f%05d.pdf", i))
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	state := b.TempDir()
	env := mcpkittest.CleanEnv(b, "BASTION_WORKSPACE_ROOT="+ws,
		"BASTION_JOURNAL="+filepath.Join(state, "organizerd.journal"), "BASTION_AUDIT_LOG="+filepath.Join(state, "audit.jsonl"))
	c, _ := mcpkittest.StartStdio(b, bin, env)
	return &applier{name: name, c: c}
}

// round plans (timed apart), applies (timed) and undoes (untimed) the
// whole workspace once, so the next round starts from the same tree.
func (a *applier) round(b *testing.B, n int) {
	t0 := time.Now()
	r := mcpkittest.Call(b, a.c, "plan_organize", nil)
	a.plans = append(a.plans, time.Since(t0))
	var p struct {
		PlanID    string `json:"plan_id"`
		MoveCount int    `json:"move_count"`
	}
	r.DecodeDetail(b, &p)
	if r.Code != "OK" || p.MoveCount != n {
		b.Fatalf("%s plan_organize: %s %s, %d moves, want %d", a.name, r.Code, r.Reason, p.MoveCount, n)
	}
	t0 = time.Now()
	r = mcpkittest.Call(b, a.c, "apply_plan", map[string]any{"plan_id": p.PlanID})
	a.applys = append(a.applys, time.Since(t0))
	if r.Code != "OK" {
		b.Fatalf("%s apply_plan: %s %s", a.name, r.Code, r.Reason)
	}
	if r = mcpkittest.Call(b, a.c, "undo_last_action", nil); r.Code != "OK" {
		b.Fatalf("%s undo_last_action: %s %s", a.name, r.Code, r.Reason)
	}
}

// BenchmarkApply10kVsBaseline measures apply_plan of a 10,000-file plan
// end to end over stdio (the built binary: plan id, re-check of every
// file, audit intent, journal, 10,000 renames, directory fsyncs, outcome),
// and plan_organize of the same workspace apart. With
// $BASTION_BENCH_BASELINE naming an earlier organizerd build
// (scripts/bench/organizerd-baseline.sh builds one), that build is
// measured in the same run on a workspace of its own, the rounds
// alternating which binary goes first, and the ratios of the p50s are
// reported (goal: apply <= 1.05x).
func BenchmarkApply10kVsBaseline(b *testing.B) {
	servers := []*applier{startApplier(b, bin, "organizerd", applyFiles)}
	if p := os.Getenv(baselineEnv); p != "" {
		servers = append(servers, startApplier(b, p, "baseline", applyFiles))
	}
	for _, s := range servers { // warm up
		s.round(b, applyFiles)
		s.plans, s.applys = nil, nil
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range servers {
			s := servers[k]
			if i%2 == 1 {
				s = servers[len(servers)-1-k]
			}
			s.round(b, applyFiles)
		}
	}
	b.StopTimer()
	org := servers[0]
	b.ReportMetric(float64(p50(org.applys).Microseconds())/1000, "apply-p50-ms")
	b.ReportMetric(float64(p50(org.plans).Microseconds())/1000, "plan-p50-ms")
	if len(servers) == 1 {
		fmt.Println("baseline: none (set " + baselineEnv + " to an earlier organizerd build, or run scripts/bench/organizerd-baseline.sh)")
		return
	}
	base := servers[1]
	b.ReportMetric(float64(p50(base.applys).Microseconds())/1000, "baseline-apply-p50-ms")
	b.ReportMetric(float64(p50(base.plans).Microseconds())/1000, "baseline-plan-p50-ms")
	b.ReportMetric(float64(p50(org.applys))/float64(p50(base.applys)), "apply-ratio")
	b.ReportMetric(float64(p50(org.plans))/float64(p50(base.plans)), "plan-ratio")
}
