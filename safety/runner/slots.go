package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// LimitConcurrency is detail.limit (Outcome.Limit) of a call refused
// because max_concurrent commands were running and max_queued calls were
// already waiting, or because it waited its whole timeout for a slot.
const LimitConcurrency = "concurrency"

// progressEvery is how often a waiting call reports where it stands.
const progressEvery = time.Second

// QueueProgress is where a call waiting for a slot stands, as reported to
// Request.Progress.
type QueueProgress struct {
	// Position is the call's place in the queue, 1 for the next to run;
	// 0 in the last report, when it got its slot.
	Position int
	// Waiting is how many calls wait, this one included.
	Waiting int
	// Running is how many commands run; MaxConcurrent is the bound.
	Running, MaxConcurrent int
	// Waited is how long the call has waited so far.
	Waited time.Duration
}

// Message is the report as one sentence for a person.
func (p QueueProgress) Message() string {
	if p.Position == 0 {
		return fmt.Sprintf("got a slot after waiting %s; the command starts", p.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("waiting for a slot: position %d of %d in the queue, %d of max_concurrent = %d commands running, waited %s",
		p.Position, p.Waiting, p.Running, p.MaxConcurrent, p.Waited.Round(time.Second))
}

// slots bounds the commands that run at once (max) and the calls that wait
// for one of them to end (maxQueued). Waiting calls are served first in,
// first out; a slot that is freed passes straight to the first waiter, so
// a newcomer never overtakes the queue.
type slots struct {
	mu        sync.Mutex
	max       int
	maxQueued int
	running   int
	queue     []*waiter
}

// waiter is one call in the queue; ready is closed when it is handed a
// slot (granted, under mu).
type waiter struct {
	ready   chan struct{}
	granted bool
}

func newSlots(max, maxQueued int) *slots { return &slots{max: max, maxQueued: maxQueued} }

// release frees a slot: it passes to the first waiter, or is returned.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		w := s.queue[0]
		s.queue = s.queue[1:]
		w.granted = true
		close(w.ready)
		return
	}
	s.running--
}

// position returns w's place in the queue (1-based; 0 if it is not there)
// and the queue's and the running counts, under mu.
func (s *slots) position(w *waiter) (pos, waiting, running int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.queue {
		if q == w {
			pos = i + 1
		}
	}
	return pos, len(s.queue), s.running
}

// leave takes w out of the queue; if it was handed a slot meanwhile, the
// slot is released to the next call. Either way w holds nothing after.
func (s *slots) leave(w *waiter) {
	s.mu.Lock()
	granted := w.granted
	if !granted {
		for i, q := range s.queue {
			if q == w {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
	}
	s.mu.Unlock()
	if granted {
		s.release()
	}
}

// acquire takes a slot, waiting in the queue for at most wait, and returns
// the function that frees it (once) and whether the call waited. It
// refuses, holding nothing, with LIMIT_EXCEEDED (limit "concurrency") when
// the queue is full or the wait ran out, and with the context's error
// when ctx ends first. While the call waits, progress (when not nil) is
// told where it stands at once and then every progressEvery, and once
// more when it gets its slot.
func (s *slots) acquire(ctx context.Context, wait time.Duration, progress func(QueueProgress)) (func(), bool, error) {
	var once sync.Once
	free := func() { once.Do(s.release) }
	s.mu.Lock()
	if s.running < s.max && len(s.queue) == 0 {
		s.running++
		s.mu.Unlock()
		return free, false, nil
	}
	if len(s.queue) >= s.maxQueued {
		running := s.running
		s.mu.Unlock()
		return nil, false, result.New(result.LimitExceeded, fmt.Sprintf(
			"%d commands are running (terminal.limits.max_concurrent = %d) and %d calls are already waiting for one to end "+
				"(terminal.limits.max_queued = %d): nothing ran; call again once a running command has ended",
			running, s.max, s.maxQueued, s.maxQueued))
	}
	w := &waiter{ready: make(chan struct{})}
	s.queue = append(s.queue, w)
	s.mu.Unlock()

	start := time.Now()
	report := func() {
		if progress != nil {
			pos, waiting, running := s.position(w)
			if pos > 0 {
				progress(QueueProgress{Position: pos, Waiting: waiting, Running: running, MaxConcurrent: s.max, Waited: time.Since(start)})
			}
		}
	}
	report()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.ready:
			if progress != nil {
				progress(QueueProgress{Running: s.max, MaxConcurrent: s.max, Waited: time.Since(start)})
			}
			return free, true, nil
		case <-tick.C:
			report()
		case <-ctx.Done():
			s.leave(w)
			return nil, true, result.Wrap(result.OperationFailed,
				"the call ended while it waited for a slot (terminal.limits.max_concurrent): nothing ran", ctx.Err())
		case <-deadline.C:
			s.leave(w)
			return nil, true, result.New(result.LimitExceeded, fmt.Sprintf(
				"waited %s (terminal.limits.timeout_seconds) for one of the terminal.limits.max_concurrent = %d slots "+
					"and none came free: nothing ran; call again later", wait.Round(time.Second), s.max))
		}
	}
}

// slot takes one of the max_concurrent slots for the judged (and, for an
// ask decision, approved) call j, waiting in the queue for at most the
// command's timeout. It runs after every refusal and question, so neither
// a refused call nor a person deciding ever holds a slot. A call that had
// to wait is judged again, as a fresh call would be, once it has its
// slot: the same executable in the same working directory with the same
// decision, or STALE. It returns the judged call to run (whose directory
// the caller closes) and the function that frees the slot, or the Outcome
// to answer with (j's directory closed, no slot held) and false.
func (r *Runner) slot(ctx context.Context, req Request, j judged) (judged, func(), Outcome, bool) {
	free, waited, err := r.slots.acquire(ctx, r.o.Timeout, req.Progress)
	if err != nil {
		j.dh.Close()
		out := r.refused(req.Line, err)
		if result.CodeOf(err) == result.LimitExceeded {
			out.Limit = LimitConcurrency
		}
		return judged{}, nil, out, false
	}
	if !waited {
		return j, free, Outcome{}, true
	}
	now, err := r.judge(req)
	switch {
	case err != nil:
	case (now.ev.askErr == nil) != (j.ev.askErr == nil):
		now.dh.Close()
		err = errWaited("the command's decision changed")
	case now.ev.Executable != j.ev.Executable:
		now.dh.Close()
		err = errWaited("the program now resolves to " + now.ev.Executable + ", not " + j.ev.Executable)
	case now.dir != j.dir || now.id != j.id:
		now.dh.Close()
		err = errWaited("the working directory was replaced")
	}
	j.dh.Close()
	if err != nil {
		free()
		return judged{}, nil, r.refused(req.Line, err), false
	}
	return now, free, Outcome{}, true
}

// errWaited is the STALE refusal of a call whose facts changed while it
// waited for a slot.
func errWaited(why string) error {
	return result.New(result.Stale, why+" while the call waited for a slot (terminal.limits.max_concurrent): "+
		"nothing was run; call again to run the command as it is now")
}
