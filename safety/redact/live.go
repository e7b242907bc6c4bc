package redact

import (
	"bytes"
	"sync"
	"time"
)

// QuietHold is how long a LiveWriter holds the last, unfinished line of a
// live stream after the stream's last write before it releases it (a
// prompt such as ">>> " that no newline follows).
const QuietHold = time.Second

// liveMax is how much unfinished text a LiveWriter holds at most: past it
// (a stream that writes no newline), all but the last MaxSpan bytes are
// released.
const liveMax = 4 * MaxSpan

// pemOpen finds the BEGIN line of a private key block.
var pemOpen = []byte("-----BEGIN")

// LiveWriter redacts a live stream (a session's output, read while the
// command still runs) and hands the redacted text, its terminal control
// characters neutralised unless raw, to a sink as soon as it is safe to:
//
//   - whole lines are released at once, each redacted with the lines
//     written with it;
//   - the last, unfinished line is held until its newline arrives, or
//     until the stream has been quiet for QuietHold: a secret written in
//     two parts less than QuietHold apart is therefore redacted whole;
//   - a private key block is held from its BEGIN line until its END line
//     (or MaxSpan bytes), quiet or not, so its body is never released
//     before the block can be recognised;
//   - unfinished text past 64 KiB is released but for its last MaxSpan
//     bytes.
//
// What it does not promise: a secret written in parts more than QuietHold
// apart with no newline between them, or split across lines (other than
// a private key block), can be released in part. It is safe for
// concurrent use; Close releases what is held.
type LiveWriter struct {
	mu          sync.Mutex
	set         *Set
	nz          *neutraliser // nil: raw
	sink        func([]byte)
	pending     []byte
	timer       *time.Timer
	closed      bool
	totalIn     int64
	redactions  int
	neutralised int
}

// NewLiveWriter returns a LiveWriter that hands what it releases to sink
// (called with the writer's lock held, never concurrently; sink must not
// call the writer). neutralise shows terminal control characters as
// visible escapes (see Neutralise).
func (s *Set) NewLiveWriter(neutralise bool, sink func([]byte)) *LiveWriter {
	w := &LiveWriter{set: s, sink: sink}
	if neutralise {
		w.nz = &neutraliser{plain: sink, esc: func(e []byte) {
			w.neutralised++
			sink(e)
		}}
	}
	return w
}

// Write takes all of p and returns len(p), nil, always.
func (w *LiveWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.totalIn += int64(n)
	if w.closed {
		return n, nil
	}
	w.pending = append(w.pending, p...)
	w.release(false)
	if len(w.pending) > 0 {
		if w.timer == nil {
			w.timer = time.AfterFunc(QuietHold, w.quiet)
		} else {
			w.timer.Reset(QuietHold)
		}
	}
	return n, nil
}

// quiet releases the unfinished line once the stream has been quiet.
func (w *LiveWriter) quiet() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.release(true)
	}
}

// release hands the safe part of pending to the sink: up to the last
// newline, or everything when quiet; never past an open private key block
// (unless it is longer than MaxSpan).
func (w *LiveWriter) release(quiet bool) {
	cut := bytes.LastIndexByte(w.pending, '\n') + 1
	if quiet {
		cut = len(w.pending)
	}
	if cut == 0 && len(w.pending) > liveMax {
		cut = len(w.pending) - MaxSpan
	}
	if b := bytes.LastIndex(w.pending[:cut], pemOpen); b >= 0 && len(w.pending)-b <= MaxSpan &&
		!bytes.Contains(w.pending[b:], []byte("-----END")) {
		cut = b
	}
	if cut > 0 {
		w.emit(w.pending[:cut])
		n := copy(w.pending, w.pending[cut:])
		w.pending = w.pending[:n]
	}
}

// emit redacts b and passes it on.
func (w *LiveWriter) emit(b []byte) {
	r, n := w.set.Redact(b)
	w.redactions += n
	if w.nz != nil {
		w.nz.feed(r)
		return
	}
	w.sink(r)
}

// Close releases everything held. Writes after Close are counted only.
func (w *LiveWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if len(w.pending) > 0 {
		w.emit(w.pending)
		w.pending = nil
	}
	if w.nz != nil {
		w.nz.flush()
	}
}

// TotalIn returns the number of bytes written.
func (w *LiveWriter) TotalIn() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.totalIn
}

// Redactions returns the number of secrets replaced so far.
func (w *LiveWriter) Redactions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.redactions
}

// Neutralised returns the number of control characters shown as visible
// escapes so far.
func (w *LiveWriter) Neutralised() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.neutralised
}
