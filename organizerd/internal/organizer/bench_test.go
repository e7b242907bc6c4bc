package organizer

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/organize"
)

// p50 returns the median of ds.
func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

// gap is the pause between two timed calls, untimed, as a client's round
// trip leaves one: the journal settles an action (directory fsyncs, commit
// record) in the background after answering, and a loop without a gap
// would time that settle in the next call instead.
const gap = 3 * time.Millisecond

// BenchmarkMoveFileBreakdown measures where one move_file's time goes, each
// part alone on the same disk (the test's temporary directory) in the same
// run: a bare rename; a rename plus the fsync of its directory (what the
// settle adds per changed directory); an fsync'd append of one small record
// (a journal begin or commit); the audit intent plus outcome (two fsync'd
// appends, on the answer's path); the journal's action until it answers
// (begin record fsync'd, rename; no audit); and the whole tool call through
// an in-process MCP client. It reports each part's p50 in microseconds.
func BenchmarkMoveFileBreakdown(b *testing.B) {
	parts := []struct {
		name string
		run  func(b *testing.B, n int) []time.Duration
	}{
		{"rename", benchRename(false)},
		{"rename+dirsync", benchRename(true)},
		{"append+fsync", benchAppendSync},
		{"audit-intent+outcome", benchAudit},
		{"journal-answer", benchJournalDo},
		{"move_file", benchMoveFileCall},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			ds := p.run(b, b.N)
			b.ReportMetric(float64(p50(ds).Microseconds()), "p50-µs")
		})
	}
}

func benchRename(sync bool) func(b *testing.B, n int) []time.Duration {
	return func(b *testing.B, n int) []time.Duration {
		dir := b.TempDir()
		a, z := filepath.Join(dir, "a.pdf"), filepath.Join(dir, "z.pdf")
		os.WriteFile(a, []byte("x"), 0o644)
		ds := make([]time.Duration, 0, n)
		for i := range n {
			src, dst := a, z
			if i%2 == 1 {
				src, dst = z, a
			}
			t0 := time.Now()
			if err := os.Rename(src, dst); err != nil {
				b.Fatal(err)
			}
			if sync {
				if err := syncDir(dir); err != nil {
					b.Fatal(err)
				}
			}
			ds = append(ds, time.Since(t0))
		}
		return ds
	}
}

func benchAppendSync(b *testing.B, n int) []time.Duration {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(`{"t":"begin","id":1,"op":"do","tool":"move_file","moves":[{"src":"a.pdf","dst":"z.pdf"}]}` + "\n")
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		f.Write(line)
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	return ds
}

func benchAudit(b *testing.B, n int) []time.Duration {
	alog, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Server: "organizerd"})
	if err != nil {
		b.Fatal(err)
	}
	defer alog.Close()
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		id, err := alog.Intent("move_file", map[string]any{"src": "a.pdf", "dest": "z.pdf", "moves": 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := alog.Outcome(id, "move_file", "OK", map[string]any{"moved": 1}); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	return ds
}

func benchJournalDo(b *testing.B, n int) []time.Duration {
	ws := b.TempDir()
	os.WriteFile(filepath.Join(ws, "a.pdf"), []byte("x"), 0o644)
	root, err := jail.OpenRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	j, _, err := journal.Open(filepath.Join(b.TempDir(), "j"), root, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	ds := make([]time.Duration, 0, n)
	for i := range n {
		src, dst := "a.pdf", "z.pdf"
		if i%2 == 1 {
			src, dst = dst, src
		}
		info, err := root.Lstat(src)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(gap)
		t0 := time.Now()
		if _, err := j.Do("move_file", src+" -> "+dst, []journal.Move{{Src: src, Dst: dst, State: jail.StateOf(info)}}, nil); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	return ds
}

func benchMoveFileCall(b *testing.B, n int) []time.Duration {
	e := newBenchEnv(b)
	ds := make([]time.Duration, 0, n)
	for i := range n {
		src, dst := "a.pdf", "z.pdf"
		if i%2 == 1 {
			src, dst = dst, src
		}
		time.Sleep(gap)
		t0 := time.Now()
		r := mcpkittest.Call(b, e.c, "move_file", map[string]any{"src": src, "dest": dst})
		ds = append(ds, time.Since(t0))
		if r.Code != "OK" {
			b.Fatalf("move_file: %s %s", r.Code, r.Reason)
		}
	}
	return ds
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type benchEnv struct{ c *client.Client }

// newBenchEnv is newEnv for a benchmark: one organizerd with a real
// workspace holding a.pdf, journal and audit log on the test's disk.
func newBenchEnv(b *testing.B) benchEnv {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	os.WriteFile(filepath.Join(ws, "a.pdf"), []byte("x"), 0o644)
	root, err := jail.OpenRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	rules, err := organize.New(config.Organizer{})
	if err != nil {
		b.Fatal(err)
	}
	alog, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Server: "organizerd", Roots: []string{ws}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { alog.Close() })
	j, _, err := journal.Open(filepath.Join(b.TempDir(), "organizerd.journal"), root, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	srv := New(Options{Version: "bench", Options: organize.Options{Root: root, Rules: rules, Journal: j, Audit: alog}})
	return benchEnv{c: mcpkittest.StartInProcess(b, srv.MCP())}
}
