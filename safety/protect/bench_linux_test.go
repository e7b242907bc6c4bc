package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkScan measures Set.Scan, once the tree is known (the Set
// remembers it between scans, as between a server's commands), over a
// repository with hooks and a source tree of the given number of
// directories, each with five files: with nothing changed since the last
// scan, and with a file made in one directory.
func BenchmarkScan(b *testing.B) {
	for _, dirs := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("dirs=%d", dirs), func(b *testing.B) {
			top := b.TempDir()
			for _, f := range []string{".git/config", ".git/hooks/pre-commit.sample", ".git/info/exclude", ".git/objects/ab/cd", "README"} {
				p := filepath.Join(top, f)
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				_ = os.WriteFile(p, []byte("x"), 0o644)
			}
			for i := 0; i < dirs; i++ {
				d := filepath.Join(top, "src", fmt.Sprintf("p%d", i/10), fmt.Sprintf("d%d", i))
				_ = os.MkdirAll(d, 0o755)
				for j := 0; j < 5; j++ {
					_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.js", j)), []byte("x"), 0o644)
				}
			}
			fd, _ := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			defer unix.Close(fd)
			s := Default()
			// Past the hot window, and once to remember the tree: the
			// steady state of a server between commands.
			time.Sleep(time.Duration(hotWindow) + 50*time.Millisecond)
			if _, err := s.Scan(fd, top, true); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Scan(fd, top, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(dirs), "µs/dir")
			// And after a command that made a file in one directory: the
			// watcher names it, and only it is listed again.
			one := filepath.Join(top, "src", "p0", "d0", "new.js")
			var changed time.Duration
			for i := 0; i < b.N; i++ {
				_ = os.WriteFile(one, []byte("x"), 0o644)
				t0 := time.Now()
				if _, err := s.Scan(fd, top, true); err != nil {
					b.Fatal(err)
				}
				changed += time.Since(t0)
				_ = os.Remove(one)
			}
			b.ReportMetric(float64(changed.Microseconds())/float64(b.N)/float64(dirs), "µs/dir-after-a-change")
		})
	}
}
