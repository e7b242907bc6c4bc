package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
)

func makeTree(b *testing.B, dir string, n int) {
	exts := []string{"pdf", "jpg", "mp3", "zip", "csv", "go", "epub", "ttf", "pptx", "mkv"}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.%s", i, exts[i%10])), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, e := range exts {
		os.Mkdir(filepath.Join(dir, "cat-"+e), 0o755)
	}
}

// BenchmarkApply10kVsRenameLoop applies a 10,000-file plan through the
// journal (fsync'd begin, batched done records, directory fsyncs, commit)
// and, over an identical tree in the same run, a plain os.Rename loop. It
// reports both and the ratio.
func BenchmarkApply10kVsRenameLoop(b *testing.B) {
	const n = 10000
	var journalT, plainT time.Duration
	for range b.N {
		b.StopTimer()
		plain, ws := b.TempDir(), b.TempDir()
		makeTree(b, plain, n)
		makeTree(b, ws, n)
		root, err := jail.OpenRoot(ws)
		if err != nil {
			b.Fatal(err)
		}
		j, _, err := Open(filepath.Join(b.TempDir(), "j"), root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		ents, _ := os.ReadDir(ws)
		var moves []Move
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			i, _ := root.Lstat(e.Name())
			moves = append(moves, Move{Src: e.Name(), Dst: "cat-" + filepath.Ext(e.Name())[1:] + "/" + e.Name(), State: jail.StateOf(i)})
		}
		b.StartTimer()
		t0 := time.Now()
		for _, e := range ents {
			if !e.IsDir() {
				os.Rename(filepath.Join(plain, e.Name()), filepath.Join(plain, "cat-"+filepath.Ext(e.Name())[1:], e.Name()))
			}
		}
		plainT += time.Since(t0)
		t0 = time.Now()
		out, err := j.Do("apply_plan", "bench", moves, nil)
		journalT += time.Since(t0)
		if err != nil || len(out.Action.Moves) != n {
			b.Fatalf("%v", err)
		}
		b.StopTimer()
		j.Close()
		root.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(journalT.Milliseconds())/float64(b.N), "journal-ms")
	b.ReportMetric(float64(plainT.Milliseconds())/float64(b.N), "rename-loop-ms")
	b.ReportMetric(float64(journalT)/float64(plainT), "ratio")
}
