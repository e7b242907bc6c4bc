package sandbox

import (
	"context"
	"testing"
)

// parkedFor counts the prepared helpers waiting for runs in home.
func parkedFor(home string) int {
	parked.Lock()
	defer parked.Unlock()
	n := 0
	for _, p := range parked.list {
		if p.home == home {
			n++
		}
	}
	return n
}

// TestPreparedHelperThatNoLongerMatchesIsEnded: a helper prepared for a
// run whose settings then changed (here the limits) does not serve the
// run, which starts its own, and it is ended rather than left holding a
// place among the prepared until evicted; a matching one serves its run.
func TestPreparedHelperThatNoLongerMatchesIsEnded(t *testing.T) {
	b := newBox(t)
	s := b.spec(t, "true")
	Prepare(s)
	if n := parkedFor(b.home); n != 1 {
		t.Fatalf("%d helpers prepared for the run's HOME, want 1", n)
	}
	changed := s
	changed.Limits.MaxOpenFiles = s.Limits.withDefaults().MaxOpenFiles - 1
	hits0, misses0 := PrepareStats()
	if out, err := Run(context.Background(), changed); err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, out)
	}
	hits, misses := PrepareStats()
	if hits != hits0 || misses != misses0+1 {
		t.Fatalf("the changed run found a prepared helper (hits +%d, misses +%d)", hits-hits0, misses-misses0)
	}
	// What is parked for this HOME now is the changed run's own helper,
	// kept for its next command (reuse_linux.go), and nothing else.
	if n := parkedFor(b.home); n != 1 {
		t.Fatalf("%d helpers parked for this HOME, want only the changed run's own", n)
	}
	hits1, _ := PrepareStats()
	if out, err := Run(context.Background(), changed); err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, out)
	}
	if h, _ := PrepareStats(); h != hits1+1 {
		t.Fatal("the changed run's next command did not find the helper kept for it")
	}
	hits, _ = PrepareStats()
	Prepare(s)
	if out, err := Run(context.Background(), s); err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, out)
	}
	if h, _ := PrepareStats(); h != hits+1 {
		t.Fatal("the matching run did not find its prepared helper")
	}
}
