package sweep

import (
	"context"
	"runtime"
	"sync"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// measureAll walks every find once, in parallel, through an fd opened
// anchored and checked against the identity seen by the discovery walk.
// The one walk gives the find its size (its own disk bytes and Dir.Usage's
// of everything beneath) and its radar view by names (risk.Engine's
// SummarizeDir with SummaryLimits.Usage). A find whose identity changed is
// sized -1. A cancelled ctx stops every walk.
func measureAll(ctx context.Context, eng *risk.Engine, finds []*found) {
	eachFind(ctx, finds, func(f *found) {
		d, err := f.root.OpenDir(f.rel)
		if err != nil {
			f.size = -1
			return
		}
		defer d.Close()
		if d.Info().ID != f.id {
			f.size = -1
			return
		}
		var below int64
		below, f.radar, f.git = measure(ctx, eng, f.root, d)
		f.size = below + d.Info().DiskBytes
	})
}

// measure returns the disk usage beneath the find d, its radar view and
// what git says of its files (nil outside any repository), from one walk. Without an engine, or when the summary's walk was refused
// part-way (an unreadable directory), the size comes from Dir.Usage alone
// and the radar is nil, as the client is told ("null when its walk did
// not finish").
func measure(ctx context.Context, eng *risk.Engine, root *jail.Root, d *jail.Dir) (int64, *FindRadar, *risk.SummaryGit) {
	if eng != nil {
		s, err := eng.SummarizeDir(ctx, root, d, risk.SummaryLimits{MaxListed: FindRadarMaxItems, Usage: true})
		if err == nil {
			return s.Usage.Bytes, findRadar(root, s), s.Git
		}
		if ctx.Err() != nil {
			return 0, nil, nil // the scan fails as cancelled
		}
	}
	u, _ := d.Usage(func() bool { return ctx.Err() != nil })
	return u.Bytes, nil, nil
}

// recheckAll reads, for every shown find, the content of the few files its
// radar lists as HIGH_RISK by name (FindRadar.recheck), in parallel.
func recheckAll(ctx context.Context, eng *risk.Engine, shown []*found) {
	if eng == nil {
		return
	}
	eachFind(ctx, shown, func(f *found) {
		if f.radar != nil {
			f.radar.recheck(eng, f.root)
		}
	})
}

// eachFind runs fn on every find on up to 8 goroutines (twice GOMAXPROCS);
// a cancelled ctx stops handing out finds.
func eachFind(ctx context.Context, finds []*found, fn func(*found)) {
	workers := min(runtime.GOMAXPROCS(0)*2, 8)
	ch := make(chan *found)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range ch {
				fn(f)
			}
		}()
	}
	for _, f := range finds {
		if ctx.Err() != nil {
			break
		}
		ch <- f
	}
	close(ch)
	wg.Wait()
}
