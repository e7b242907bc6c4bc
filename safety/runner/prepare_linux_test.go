package runner

import (
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// TestPreparedHelperMatchesAfterABurst: after a burst of parallel calls
// leaves several clean pairs in the pool, paced calls still find the
// helper prepared for them (issue 19: the prepared pair used to go to the
// end of the pool, so every later call took another pair and started a
// helper on the request path).
func TestPreparedHelperMatchesAfterABurst(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxConcurrent = 4 })
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out := f.run("pwd"); !out.Ran || out.ExitCode != 0 {
				t.Errorf("burst: %s %s", out.Code, out.Reason)
			}
		}()
	}
	wg.Wait()
	// Paced: each call comes once the server has prepared the next
	// helper (as an agent's next call comes after its thinking).
	ready := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); len(f.r.primed) == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no helper was prepared within 10 s of the last answer")
			}
		}
	}
	ready()
	hits0, misses0 := sandbox.PrepareStats()
	const paced = 5
	for i := 0; i < paced; i++ {
		if out := f.run("pwd"); !out.Ran || out.ExitCode != 0 {
			t.Fatalf("paced: %s %s", out.Code, out.Reason)
		}
		ready()
	}
	hits, misses := sandbox.PrepareStats()
	if hits-hits0 != paced || misses != misses0 {
		t.Fatalf("after a burst, %d of %d paced calls found their helper prepared (%d started one on the request path)",
			hits-hits0, paced, misses-misses0)
	}
}

// TestTwoQuickCallsBothFindAHelperPrepared: right after start-up, two
// calls in quick succession (an agent's second command sent as soon as
// the first answered) both find a helper prepared for them, none starts
// one on the request path: the runner keeps at least two prepared.
func TestTwoQuickCallsBothFindAHelperPrepared(t *testing.T) {
	f := newFixture(t)
	f.r.Prewarm()
	if got, want := len(f.r.primed), primedDepth(f.r.o.MaxConcurrent); got != want || want < 2 {
		t.Fatalf("%d pairs primed after Prewarm, want %d (at least 2)", got, want)
	}
	hits0, misses0 := sandbox.PrepareStats()
	for i := 0; i < 2; i++ {
		if out := f.run("pwd"); !out.Ran || out.ExitCode != 0 {
			t.Fatalf("call %d: %s %s", i, out.Code, out.Reason)
		}
	}
	hits, misses := sandbox.PrepareStats()
	if hits-hits0 != 2 || misses != misses0 {
		t.Fatalf("%d of 2 quick calls found their helper prepared (%d started one on the request path)", hits-hits0, misses-misses0)
	}
}

// TestPreparedHelpersMatchUnprivileged runs the prepared-helper tests
// above again with the server as an unprivileged user.
func TestPreparedHelpersMatchUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestPreparedHelperMatchesAfterABurst|TestTwoQuickCallsBothFindAHelperPrepared)$",
		examplePolicy)
}
