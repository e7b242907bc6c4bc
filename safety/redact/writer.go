package redact

import "sync"

// CappedWriter is an io.Writer that redacts what is written to it and keeps
// at most limit bytes of the redacted result. It accepts every write in full
// and never returns an error, so a child process's pipe keeps draining after
// the cap; past the cap it only counts bytes. It is safe for concurrent use.
//
// Bytes written are held back until the window they belong to is complete
// (up to BlockSize+MaxSpan bytes), so Bytes is final only after Close.
//
// A writer made by NewOutputWriter with neutralise set also shows terminal
// control characters as visible escapes (see Neutralise), between the two
// steps: redact, then neutralise, then cap. Secrets are therefore found in
// the bytes the command wrote, and the cap bounds what the client gets.
type CappedWriter struct {
	mu          sync.Mutex
	e           engine
	nz          *neutraliser // nil: output is not neutralised
	limit       int
	out         []byte
	truncated   bool
	closed      bool
	totalIn     int64
	redactions  int
	neutralised int
}

// NewCappedWriter returns a writer that keeps the first limit bytes of the
// redacted stream. A negative limit means no cap.
func (s *Set) NewCappedWriter(limit int) *CappedWriter { return s.NewOutputWriter(limit, false) }

// NewOutputWriter returns a writer that redacts the stream, then, if
// neutralise is set, shows its terminal control characters as visible
// escapes (Neutralise), and keeps the first limit bytes of the result. A
// negative limit means no cap. A visible escape is never cut in half by
// the cap: one that does not fit whole is left out.
func (s *Set) NewOutputWriter(limit int, neutralise bool) *CappedWriter {
	w := &CappedWriter{limit: limit}
	w.e.set = s
	w.e.raw = w.emit
	if neutralise {
		w.nz = &neutraliser{plain: w.emit, esc: w.emitEscape}
		w.e.raw = w.nz.feed
	}
	w.e.mark = func(sp span) {
		if w.room() > 0 {
			w.redactions++
		}
		w.e.raw([]byte(Marker(s.patterns[sp.pat].Name)))
	}
	return w
}

// emitEscape appends one visible escape, whole, if it fits under the cap,
// and counts it; otherwise it marks the writer truncated.
func (w *CappedWriter) emitEscape(e []byte) {
	if len(e) > w.room() {
		w.truncated = true
		w.e.stop = true
		return
	}
	w.neutralised++
	w.out = append(w.out, e...)
}

func (w *CappedWriter) room() int {
	if w.limit < 0 {
		return int(^uint(0) >> 1)
	}
	return w.limit - len(w.out)
}

// emit appends redacted output up to the cap; anything beyond it marks the
// writer truncated and stops the engine.
func (w *CappedWriter) emit(p []byte) {
	if len(p) == 0 {
		return
	}
	r := w.room()
	if len(p) > r {
		w.out = append(w.out, p[:r]...)
		w.truncated = true
		w.e.stop = true
		return
	}
	w.out = append(w.out, p...)
}

// Write accepts all of p and returns len(p), nil, always.
func (w *CappedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.totalIn += int64(n)
	if w.closed {
		return n, nil
	}
	for len(p) > 0 && !w.truncated {
		// Take no more than completes the next window, so the buffer stays
		// near BlockSize+MaxSpan however large p is.
		need := w.e.blockStart + BlockSize + MaxSpan - w.e.end()
		k := int(max(min(need, int64(len(p))), 1))
		w.e.buf = append(w.e.buf, p[:k]...)
		p = p[k:]
		w.e.run(false)
		w.trim()
	}
	w.release()
	return n, nil
}

// trim drops input the engine no longer needs.
func (w *CappedWriter) trim() {
	keep := w.e.keepFrom()
	if d := keep - w.e.off; d > 0 {
		n := copy(w.e.buf, w.e.buf[d:])
		w.e.buf = w.e.buf[:n]
		w.e.off = keep
	}
}

// release frees everything once the cap is reached and exceeded: from then
// on only TotalIn changes.
func (w *CappedWriter) release() {
	if w.truncated {
		w.e.buf, w.e.hits, w.e.spans = nil, nil, nil
	}
}

// Close searches and emits the held tail. Writes after Close are counted
// but otherwise ignored. Close is idempotent.
func (w *CappedWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if !w.truncated {
		w.e.run(true)
	}
	if w.nz != nil && !w.truncated {
		w.nz.flush()
	}
	w.e.buf, w.e.hits, w.e.spans = nil, nil, nil
}

// Bytes returns the redacted output kept so far (all of it after Close).
// The caller must not modify it.
func (w *CappedWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out
}

// Truncated reports whether the redacted stream was longer than the limit.
func (w *CappedWriter) Truncated() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.truncated
}

// TotalIn returns the number of bytes written, including those past the cap.
func (w *CappedWriter) TotalIn() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.totalIn
}

// Neutralised returns the number of control characters shown as visible
// escapes in the kept output (0 for a writer that does not neutralise).
// Those past the cap are not counted.
func (w *CappedWriter) Neutralised() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.neutralised
}

// Redactions returns the number of markers that begin inside the kept
// output. Secrets past the cap are not searched for and not counted.
func (w *CappedWriter) Redactions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.redactions
}
