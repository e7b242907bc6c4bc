package redact

import "sync"

// CappedWriter is an io.Writer that redacts what is written to it and keeps
// at most limit bytes of the redacted result. It accepts every write in full
// and never returns an error, so a child process's pipe keeps draining after
// the cap; past the cap it only counts bytes. It is safe for concurrent use.
//
// Bytes written are held back until the window they belong to is complete
// (up to BlockSize+MaxSpan bytes), so Bytes is final only after Close.
type CappedWriter struct {
	mu         sync.Mutex
	e          engine
	limit      int
	out        []byte
	truncated  bool
	closed     bool
	totalIn    int64
	redactions int
}

// NewCappedWriter returns a writer that keeps the first limit bytes of the
// redacted stream. A negative limit means no cap.
func (s *Set) NewCappedWriter(limit int) *CappedWriter {
	w := &CappedWriter{limit: limit}
	w.e.set = s
	w.e.raw = w.emit
	w.e.mark = func(sp span) {
		if w.room() > 0 {
			w.redactions++
		}
		w.emit([]byte(Marker(s.patterns[sp.pat].Name)))
	}
	return w
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

// Redactions returns the number of markers that begin inside the kept
// output. Secrets past the cap are not searched for and not counted.
func (w *CappedWriter) Redactions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.redactions
}
