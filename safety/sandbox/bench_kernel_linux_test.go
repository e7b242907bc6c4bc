package sandbox

import (
	"testing"
)

// BenchmarkIdmappedTrees is what a root server adds to each helper's start
// for a command that runs as nobody in a root-owned jail: an idmapped copy
// of the jail, HOME and TMPDIR (twice). Unprivileged it measures nothing
// (no copy is made).
func BenchmarkIdmappedTrees(b *testing.B) {
	bx := newBox(b)
	s := bx.spec(b, "true")
	p, err := plan(s.Landlock, s.Isolation, s.net())
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := staticConfig(&s, p)
	if err != nil {
		b.Fatal(err)
	}
	timed(b, func() error {
		files, err := idmappedTrees(&cfg)
		for _, f := range files {
			f.Close()
		}
		return err
	})
}
