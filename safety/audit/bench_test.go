package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// BenchmarkIntentOutcome measures one audited act: an fsync'd intent and an
// fsync'd outcome. Compare it with BenchmarkBaselineAppendFsync, run in the
// same invocation on the same file system: two of those are the floor.
// Set BASTION_BENCH_DIR to measure on a file system other than the
// temporary directory's.
func BenchmarkIntentOutcome(b *testing.B) {
	l := openLog(b, Options{Path: filepath.Join(benchDir(b), "audit.jsonl")})
	fields := map[string]any{"path": "/home/u/src/project/node_modules", "bytes": 123456789}
	b.ReportAllocs()
	for b.Loop() {
		id, err := l.Intent("reclaim", fields)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Outcome(id, "reclaim", result.OK, fields); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/2, "µs/record")
}

// BenchmarkBaselineAppendFsync is the floor: a file opened once, and a
// record-sized JSON line written and fsync'd, with no chain, lock or reopen.
func BenchmarkBaselineAppendFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(benchDir(b), "plain.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line, _ := json.Marshal(record{Seq: 1, Time: time.Now().UTC().Format(time.RFC3339Nano), Kind: KindIntent,
		Server: "sweepd", Action: "reclaim", Fields: map[string]any{"path": "/home/u/src/project/node_modules", "bytes": 123456789},
		Prev: GenesisPrev})
	line = append(line, '\n')
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/record")
}

func benchDir(b *testing.B) string {
	if d := os.Getenv("BASTION_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "audit-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}
