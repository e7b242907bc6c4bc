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
	runBurst(t, f, 4)
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

// TestBackToBackBurstsFindTheirHelpersKept: bursts of max_concurrent
// parallel calls, each sent as soon as the last one answered, never start
// a helper on the request path: a run's pair and its kept helper are back
// among the primed when its answer leaves (giveBack). They used to come
// back 5 ms later, after the next burst had found no primed pair: every
// call of such bursts then started a helper (5.6 ms of CPU per call
// instead of 1.8).
func TestBackToBackBurstsFindTheirHelpersKept(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxConcurrent = 2 })
	f.r.Prewarm()
	hits0, misses0 := sandbox.PrepareStats()
	const bursts = 30
	for range bursts {
		runBurst(t, f, 2)
	}
	hits, misses := sandbox.PrepareStats()
	if misses != misses0 || hits-hits0 != 2*bursts {
		t.Fatalf("%d of %d calls in back-to-back bursts of 2 found a helper prepared or kept; %d started one on the request path",
			hits-hits0, 2*bursts, misses-misses0)
	}
}

// runBurst runs pwd n times in parallel and waits for all of them.
func runBurst(t *testing.T, f *fixture, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out := f.run("pwd"); !out.Ran || out.ExitCode != 0 {
				t.Errorf("burst of %d: %s %s", n, out.Code, out.Reason)
			}
		}()
	}
	wg.Wait()
}

// TestPreparedHelpersMatchUnprivileged runs the prepared-helper tests
// above again with the server as an unprivileged user.
func TestPreparedHelpersMatchUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestPreparedHelperMatchesAfterABurst|TestTwoQuickCallsBothFindAHelperPrepared|TestBackToBackBurstsFindTheirHelpersKept)$",
		examplePolicy)
}
