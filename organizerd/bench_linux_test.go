//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// peerNode and peerServer are the pinned Node 22 and the official
// filesystem MCP server that `make clients-setup` installs.
const (
	peerNode   = "../scripts/clients/node_modules/.bin/node"
	peerServer = "../scripts/clients/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)

// mover is one server under measurement: a client on it and how to ask it
// to move src to dst inside its workspace.
type mover struct {
	name string
	c    *client.Client
	args func(src, dst string) map[string]any
	ds   []time.Duration
}

// moveOnce calls move_file and records its wall time; a refusal fails b.
func (m *mover) moveOnce(b *testing.B, src, dst string) {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = "move_file", m.args(src, dst)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	out, err := m.c.CallTool(ctx, req)
	m.ds = append(m.ds, time.Since(t0))
	if err != nil || out.IsError {
		b.Fatalf("%s move_file %s -> %s: %v %+v", m.name, src, dst, err, out)
	}
	if m.name != "server-filesystem" {
		if r := mcpkittest.Parse(b, out); r.Code != "OK" {
			b.Fatalf("organizerd move_file %s -> %s: %s %s", src, dst, r.Code, r.Reason)
		}
	}
}

// p50 returns the median of ds.
func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

// benchWorkspace makes a workspace on the test's disk holding a.pdf and an
// empty Documents folder.
func benchWorkspace(b *testing.B) string {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	if err := os.Mkdir(filepath.Join(ws, "Documents"), 0o755); err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	p := filepath.Join(ws, "a.pdf")
	if err := os.WriteFile(p, []byte("a document"), 0o644); err != nil {
		b.Fatal(err)
	}
	os.Chtimes(p, old, old)
	return ws
}

// baselineEnv names another organizerd binary (an earlier build) that
// BenchmarkMoveFileVsFilesystemServer measures too, in the same run.
const baselineEnv = "BASTION_BENCH_BASELINE"

// startOrganizerd starts the organizerd binary bin over stdio on ws, with
// its journal and audit log on the same disk.
func startOrganizerd(b *testing.B, bin, name, ws string) *mover {
	state := b.TempDir()
	env := mcpkittest.CleanEnv(b, "BASTION_WORKSPACE_ROOT="+ws,
		"BASTION_JOURNAL="+filepath.Join(state, "organizerd.journal"), "BASTION_AUDIT_LOG="+filepath.Join(state, "audit.jsonl"))
	c, _ := mcpkittest.StartStdio(b, bin, env)
	return &mover{name: name, c: c, args: func(src, dst string) map[string]any {
		return map[string]any{"src": src, "dest": dst}
	}}
}

// startPeer starts the official filesystem server on ws under the pinned
// Node, or returns nil when `make clients-setup` has not installed them.
func startPeer(b *testing.B, ws string) *mover {
	node, err := filepath.Abs(peerNode)
	if err != nil {
		b.Fatal(err)
	}
	script, _ := filepath.Abs(peerServer)
	if _, err := os.Stat(script); err != nil {
		return nil
	}
	if err := exec.Command(node, "-e", "process.exit(parseInt(process.versions.node) < 22 ? 1 : 0)").Run(); err != nil {
		return nil
	}
	tr := transport.NewStdio(node, nil, script, ws)
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		b.Fatalf("starting the filesystem server: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	mcpkittest.Initialize(b, c)
	return &mover{name: "server-filesystem", c: c, args: func(src, dst string) map[string]any {
		return map[string]any{"source": filepath.Join(ws, src), "destination": filepath.Join(ws, dst)}
	}}
}

// BenchmarkMoveFileVsFilesystemServer measures move_file of organizerd
// (the built binary: audit intent and outcome, journal, fsyncs) and of the
// official filesystem MCP server (npm @modelcontextprotocol/server-filesystem,
// pinned in scripts/clients/package.json; no journal, no audit, no fsync)
// through the same mcp-go stdio client in the same run, the calls
// interleaved so that both see the same load. Each call moves a.pdf into
// Documents/ or back, on the test's disk. It reports both p50s and their
// ratio (goal <= 1.0); without `make clients-setup` it measures organizerd
// alone and says the peer was skipped. With $BASTION_BENCH_BASELINE naming
// an earlier organizerd build, that build is measured in the same run too,
// and vs-baseline is this build's p50 over that build's (goal <= 1.05x;
// scripts/bench/organizerd-baseline.sh builds one).
func BenchmarkMoveFileVsFilesystemServer(b *testing.B) {
	org := startOrganizerd(b, bin, "organizerd", benchWorkspace(b))
	peer := startPeer(b, benchWorkspace(b))
	servers := []*mover{org}
	if peer != nil {
		servers = append(servers, peer)
	}
	var base *mover
	if p := os.Getenv(baselineEnv); p != "" {
		base = startOrganizerd(b, p, "organizerd", benchWorkspace(b))
		base.name = "baseline"
		servers = append(servers, base)
	}
	for _, s := range servers { // warm up both
		s.moveOnce(b, "a.pdf", "Documents/a.pdf")
		s.moveOnce(b, "Documents/a.pdf", "a.pdf")
		s.ds = nil
	}
	b.ResetTimer()
	for i := range b.N {
		src, dst := "a.pdf", "Documents/a.pdf"
		if i%2 == 1 {
			src, dst = dst, src
		}
		for _, s := range servers {
			s.moveOnce(b, src, dst)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(p50(org.ds).Microseconds()), "organizerd-p50-µs")
	if base != nil {
		b.ReportMetric(float64(p50(base.ds).Microseconds()), "baseline-p50-µs")
		b.ReportMetric(float64(p50(org.ds))/float64(p50(base.ds)), "vs-baseline")
		if peer != nil {
			b.ReportMetric(float64(p50(base.ds))/float64(p50(peer.ds)), "baseline-ratio")
		}
	}
	if peer == nil {
		fmt.Println("peer: skipped (no Node 22 with @modelcontextprotocol/server-filesystem: run make clients-setup)")
		return
	}
	b.ReportMetric(float64(p50(peer.ds).Microseconds()), "peer-p50-µs")
	b.ReportMetric(float64(p50(org.ds))/float64(p50(peer.ds)), "ratio")
}
