//go:build linux

package jail

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkUsage measures Dir.Usage on a 20,000-file tree against the
// obvious baseline, filepath.WalkDir plus an lstat per entry, on the same
// tree in the same run. Compare the two ns/op lines.
func BenchmarkUsage(b *testing.B) {
	tree := filepath.Join(b.TempDir(), "tree")
	const files, perDir = 20000, 100
	for i := range files {
		dir := filepath.Join(tree, "d"+strconv.Itoa(i/perDir/10), "e"+strconv.Itoa(i/perDir))
		if i%perDir == 0 {
			mkdirAll(b, dir)
		}
		writeFile(b, filepath.Join(dir, "f"+strconv.Itoa(i)), "x")
	}
	r := openRoot(b, filepath.Dir(tree))

	var want int64
	b.Run("jail.Usage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := r.OpenDir("tree")
			if err != nil {
				b.Fatal(err)
			}
			u, err := d.Usage(nil)
			d.Close()
			if err != nil || u.Files != files {
				b.Fatalf("%+v, %v", u, err)
			}
			want = u.Bytes
		}
		b.ReportMetric(float64(files)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
	})
	b.Run("WalkDir+Lstat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n, bytes int64
			err := filepath.WalkDir(tree, func(p string, e fs.DirEntry, err error) error {
				if err != nil || p == tree {
					return err
				}
				var st unix.Stat_t
				if err := unix.Lstat(p, &st); err != nil {
					return err
				}
				bytes += st.Blocks * 512
				if !e.IsDir() {
					n++
				}
				return nil
			})
			if err != nil || n != files || (want != 0 && bytes != want) {
				b.Fatalf("%d files %d bytes (jail: %d), %v", n, bytes, want, err)
			}
		}
		b.ReportMetric(float64(files)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
	})
}
