package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// sandboxFixture is a Runner in the sandbox profile (sh allowed) with the
// given max_concurrent and max_queued, and a timeout long enough for a
// queue of real commands on a loaded machine.
func sandboxFixture(t *testing.T, maxConcurrent, maxQueued int) *fixture {
	t.Helper()
	return newFixture(t, func(o *Options) {
		o.Policy = command.Policy{Sandboxed: true, Allow: []string{"sh"}}
		o.Sandboxed = true
		o.Timeout = 120 * time.Second
		o.MaxConcurrent, o.MaxQueued = maxConcurrent, maxQueued
	})
}

// markerLine is a command that proves what runs at once with real
// processes: it creates its own marker file in the jail, sleeps, prints
// how many markers are present, and removes its own.
func markerLine(tok string) string {
	return `sh -c 'touch m.$0; sleep 0.4; set -- m.*; echo $#; rm m.$0' ` + tok
}

// runParallel runs n marker commands at once and returns their outcomes.
func runParallel(f *fixture, n int) []Outcome {
	outs := make([]Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = f.r.Run(context.Background(), Request{Line: markerLine("c" + strconv.Itoa(i))})
		}()
	}
	wg.Wait()
	return outs
}

// maxSeen is the largest marker count the commands that ran printed.
func maxSeen(t *testing.T, outs []Outcome) int {
	t.Helper()
	seen := 0
	for _, o := range outs {
		if o.Code != result.OK {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(o.Stdout)))
		if err != nil || o.ExitCode != 0 {
			t.Fatalf("marker command: exit %d stdout %q stderr %q", o.ExitCode, o.Stdout, o.Stderr)
		}
		seen = max(seen, n)
	}
	return seen
}

// TestParallelCallsNeverRunMoreThanMaxConcurrent: 20 calls at once with a
// queue that holds them all all run, and never more than max_concurrent
// of them at the same time (the issue found 5 of 12 at once, each with its
// own memory_mb, max_processes and /dev/shm).
func TestParallelCallsNeverRunMoreThanMaxConcurrent(t *testing.T) {
	f := sandboxFixture(t, 2, 32)
	outs := runParallel(f, 20)
	for i, o := range outs {
		if o.Code != result.OK || !o.Ran {
			t.Fatalf("call %d: %s (%s)", i, o.Code, o.Reason)
		}
	}
	seen := maxSeen(t, outs)
	t.Logf("20 calls, max_concurrent 2: at most %d ran at once", seen)
	if seen > 2 {
		t.Fatalf("%d commands ran at once with max_concurrent = 2", seen)
	}
	if seen < 2 {
		t.Fatalf("the 20 calls never ran 2 at once (max %d): the slots are not shared out", seen)
	}
	if n := len(f.r.slots.queue); n != 0 || f.r.slots.running != 0 {
		t.Fatalf("after the calls: %d queued, %d running", n, f.r.slots.running)
	}
}

// TestCallsBeyondTheQueueAreRefusedAndRunNothing: with max_queued = 3,
// of 20 calls at once at most 2 run and 3 wait; the rest are refused with
// LIMIT_EXCEEDED, limit "concurrency", a reason naming both keys, and no
// intent record.
func TestCallsBeyondTheQueueAreRefusedAndRunNothing(t *testing.T) {
	f := sandboxFixture(t, 2, 3)
	outs := runParallel(f, 20)
	ok, refused := 0, 0
	for i, o := range outs {
		switch o.Code {
		case result.OK:
			ok++
		case result.LimitExceeded:
			refused++
			if o.Ran || o.Limit != LimitConcurrency || o.Stdout != nil ||
				!strings.Contains(o.Reason, "terminal.limits.max_concurrent = 2") || !strings.Contains(o.Reason, "terminal.limits.max_queued = 3") {
				t.Fatalf("call %d refused as %+v", i, o)
			}
		default:
			t.Fatalf("call %d: %s (%s)", i, o.Code, o.Reason)
		}
	}
	t.Logf("20 calls, max_concurrent 2, max_queued 3: %d ran, %d refused", ok, refused)
	if ok < 5 || refused == 0 {
		t.Fatalf("%d ran and %d were refused; want at least 2 running plus 3 queued to run, and the rest refused", ok, refused)
	}
	if seen := maxSeen(t, outs); seen > 2 {
		t.Fatalf("%d commands ran at once with max_concurrent = 2", seen)
	}
	intents := 0
	for _, rec := range f.AuditRecords(t) {
		if rec["kind"] == "intent" {
			intents++
		}
	}
	if intents != ok {
		t.Fatalf("%d intent records for %d commands run: a refused call was recorded as started", intents, ok)
	}
}

// TestQueuedCallWhoseClientCancelsLeavesTheQueueAndRunsNothing: a call
// waiting behind a running command whose context ends leaves the queue at
// once, runs nothing (its marker is never created, no intent record), and
// the next call takes the slot as soon as it is free.
func TestQueuedCallWhoseClientCancelsLeavesTheQueueAndRunsNothing(t *testing.T) {
	f := sandboxFixture(t, 1, 4)
	holding := make(chan Outcome)
	go func() { holding <- f.run(`sh -c "sleep 2"`) }()
	waitFor(t, func() bool { f.r.slots.mu.Lock(); defer f.r.slots.mu.Unlock(); return f.r.slots.running == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan QueueProgress, 16)
	done := make(chan Outcome)
	go func() {
		done <- f.r.Run(ctx, Request{Line: `sh -c "touch cancelled.txt"`, Progress: func(p QueueProgress) { queued <- p }})
	}()
	select {
	case p := <-queued:
		if p.Position != 1 || p.Waiting != 1 || p.Running != 1 || p.MaxConcurrent != 1 {
			t.Fatalf("first report %+v, want position 1 of 1 behind 1 running", p)
		}
	case out := <-done:
		t.Fatalf("the call did not wait: %+v", out)
	}
	cancel()
	out := <-done
	if out.Ran || out.Code != result.OperationFailed || !strings.Contains(out.Reason, "waited for a slot") {
		t.Fatalf("cancelled call: %+v", out)
	}
	f.r.slots.mu.Lock()
	q := len(f.r.slots.queue)
	f.r.slots.mu.Unlock()
	if q != 0 {
		t.Fatalf("%d calls still queued after the cancel", q)
	}
	if h := <-holding; h.Code != result.OK {
		t.Fatalf("holding call: %s (%s)", h.Code, h.Reason)
	}
	if testfs.Exists(filepath.Join(f.Jail, "cancelled.txt")) {
		t.Fatal("the cancelled call ran")
	}
	if out := f.run(`sh -c "echo next"`); out.Code != result.OK || string(out.Stdout) != "next\n" {
		t.Fatalf("the next call: %+v", out)
	}
	for _, rec := range f.AuditRecords(t) {
		if rec["kind"] == "intent" && strings.Contains(fmt.Sprint(rec["fields"]), "cancelled.txt") {
			t.Fatalf("an intent was recorded for the cancelled call: %v", rec)
		}
	}
}

// TestRefusedCallsTakeNoSlot: while every slot is held and the queue is
// full, a line the policy refuses is still refused at once for what it is
// (POLICY_DENIED), not for concurrency.
func TestRefusedCallsTakeNoSlot(t *testing.T) {
	f := sandboxFixture(t, 1, 1)
	holding := make(chan Outcome, 2)
	go func() { holding <- f.run(`sh -c "sleep 1.5"`) }()
	waitFor(t, func() bool { f.r.slots.mu.Lock(); defer f.r.slots.mu.Unlock(); return f.r.slots.running == 1 })
	go func() { holding <- f.run(`sh -c "true"`) }()
	waitFor(t, func() bool { f.r.slots.mu.Lock(); defer f.r.slots.mu.Unlock(); return len(f.r.slots.queue) == 1 })
	wantNothingRan(t, f.run("python3 -c 1"), "POLICY_DENIED")
	if out := f.run(`sh -c "true"`); out.Code != result.LimitExceeded || out.Limit != LimitConcurrency {
		t.Fatalf("a call beyond a full queue: %+v", out)
	}
	for range 2 {
		if h := <-holding; h.Code != result.OK {
			t.Fatalf("held or queued call: %s (%s)", h.Code, h.Reason)
		}
	}
}

// TestQueuedCallWaitsAtMostItsTimeout: a call that waits its whole
// bound for a slot leaves the queue, holds nothing and is refused with
// LIMIT_EXCEEDED naming timeout_seconds; a slot freed later goes to the
// next caller, not to the one that gave up.
func TestQueuedCallWaitsAtMostItsTimeout(t *testing.T) {
	s := newSlots(1, 1)
	free, waited, err := s.acquire(context.Background(), time.Minute, nil)
	if err != nil || waited {
		t.Fatalf("first acquire: waited %v, %v", waited, err)
	}
	start := time.Now()
	_, waited, err = s.acquire(context.Background(), 150*time.Millisecond, nil)
	if !waited || result.CodeOf(err) != result.LimitExceeded || !strings.Contains(result.Reason(err), "timeout_seconds") {
		t.Fatalf("second acquire: waited %v, %v", waited, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("gave up after %s, before its bound", d)
	}
	if len(s.queue) != 0 || s.running != 1 {
		t.Fatalf("after giving up: %d queued, %d running", len(s.queue), s.running)
	}
	free()
	free() // idempotent
	if s.running != 0 {
		t.Fatalf("after release: %d running", s.running)
	}
	if _, waited, err = s.acquire(context.Background(), time.Minute, nil); err != nil || waited {
		t.Fatalf("acquire after release: waited %v, %v", waited, err)
	}
}

// TestSlotsServeWaitersFirstInFirstOut: waiters get freed slots in the
// order they came, and a newcomer does not overtake them.
func TestSlotsServeWaitersFirstInFirstOut(t *testing.T) {
	s := newSlots(1, 8)
	free, _, _ := s.acquire(context.Background(), time.Minute, nil)
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			f, _, err := s.acquire(context.Background(), time.Minute, nil)
			if err == nil {
				order <- i
				f()
			}
		}()
		waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.queue) == i+1 })
	}
	free()
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("waiter %d got the slot in turn %d", got, want)
		}
	}
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 30 s")
}

// TestPersonDecidingHoldsNoSlot: with max_concurrent = 1, while a person
// decides about an ask decision, another call runs at once without
// waiting; the approved call takes the slot only after the answer.
func TestPersonDecidingHoldsNoSlot(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.MaxConcurrent, o.MaxQueued = 1, 1
		o.Policy.Rules = append(o.Policy.Rules, command.Rule{Command: "touch", AskArgs: []string{"asked.txt"},
			Reason: "the test asks about asked.txt"})
	})
	asking, answer := make(chan struct{}), make(chan struct{})
	done := make(chan Outcome)
	go func() {
		done <- f.r.Run(context.Background(), Request{Line: "touch asked.txt", Ask: func(context.Context, approval.Question) approval.Verdict {
			close(asking)
			<-answer
			return approval.Verdict{Proceed: true}
		}})
	}()
	<-asking
	waited := false
	out := f.r.Run(context.Background(), Request{Line: "touch other.txt", Progress: func(QueueProgress) { waited = true }})
	if out.Code != result.OK || waited {
		t.Fatalf("a call while the person decides: %s (%s), waited %v", out.Code, out.Reason, waited)
	}
	close(answer)
	if out := <-done; out.Code != result.OK || !testfs.Exists(filepath.Join(f.Jail, "asked.txt")) {
		t.Fatalf("the approved call: %s (%s)", out.Code, out.Reason)
	}
}

// TestConcurrencyLimitsHoldUnprivileged runs the concurrency tests above
// again with the server as an unprivileged user.
func TestConcurrencyLimitsHoldUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestParallelCallsNeverRunMoreThanMaxConcurrent|TestCallsBeyondTheQueueAreRefusedAndRunNothing|"+
		"TestQueuedCallWhoseClientCancelsLeavesTheQueueAndRunsNothing|TestRefusedCallsTakeNoSlot|TestPersonDecidingHoldsNoSlot)$",
		examplePolicy)
}
