package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/config"
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

// BenchmarkOpenFullLog measures Open on a log of the default rotation size
// (config.DefaultAuditMaxMB), which Open verifies whole: the cost a server
// pays at start for finding tampering. The log's records are typical
// reclaim intents and outcomes, about 250 bytes each.
func BenchmarkOpenFullLog(b *testing.B) {
	for _, mb := range []int{1, config.DefaultAuditMaxMB, 64} {
		b.Run(strconv.Itoa(mb)+"MiB", func(b *testing.B) {
			path := filepath.Join(benchDir(b), "audit.jsonl")
			writeChain(b, path, int64(mb)<<20)
			b.ResetTimer()
			for b.Loop() {
				l, err := Open(Options{Path: path, Server: "sweepd"})
				if err != nil {
					b.Fatal(err)
				}
				l.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
		})
	}
}

// writeChain writes a valid chain of records to path until it holds size
// bytes, without an fsync per record.
func writeChain(b testing.TB, path string, size int64) {
	b.Helper()
	var buf bytes.Buffer
	h := genesis
	now := time.Now().UTC()
	for seq := int64(1); int64(buf.Len()) < size; seq++ {
		rec := record{Seq: seq, Time: now.Add(time.Duration(seq) * time.Millisecond).Format(time.RFC3339Nano),
			Kind: KindEvent, Server: "sweepd", Action: "reclaim",
			Fields: map[string]any{"path": "/home/u/src/project-" + strconv.FormatInt(seq, 10) + "/node_modules", "bytes": 123456789},
			Prev:   h.hash}
		line, err := encodeLine(nil, &rec)
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
		h = head{seq: seq, hash: hashLine(line[:len(line)-1])}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
}
