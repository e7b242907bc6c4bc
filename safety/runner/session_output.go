package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// ring is a session's output: the redacted, neutralised text both of its
// streams released (redact.LiveWriter), in the order released, of which
// the last max bytes are kept. Offsets are absolute: a reader's cursor is
// the offset it has read up to, and what fell out of the ring before it
// read it is counted, never silently skipped.
type ring struct {
	mu      sync.Mutex
	buf     []byte
	head    int   // buf[head:] is kept
	start   int64 // offset of buf[head]
	end     int64 // offset after the last byte
	max     int
	sum     hash.Hash // of every byte released, kept or not
	changed chan struct{}
	onWrite func() // activity (idle expiry)
}

func newRing(max int, onWrite func()) *ring {
	return &ring{max: max, sum: sha256.New(), changed: make(chan struct{}), onWrite: onWrite}
}

// add appends p (a LiveWriter's sink).
func (r *ring) add(p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	r.sum.Write(p)
	r.buf = append(r.buf, p...)
	r.end += int64(len(p))
	if over := len(r.buf) - r.head - r.max; over > 0 {
		r.head += over
		r.start += int64(over)
	}
	if r.head > r.max {
		n := copy(r.buf, r.buf[r.head:])
		r.buf, r.head = r.buf[:n], 0
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	if r.onWrite != nil {
		r.onWrite()
	}
}

// since returns a copy of the kept text from offset from on, the offset
// it ends at, how many bytes before it were dropped unread, and the
// channel closed at the next add.
func (r *ring) since(from int64) (text []byte, next, dropped int64, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if from < 0 {
		from = 0
	}
	if from > r.end {
		from = r.end
	}
	if from < r.start {
		dropped, from = r.start-from, r.start
	}
	text = bytes.Clone(r.buf[r.head+int(from-r.start):])
	return text, r.end, dropped, r.changed
}

// total returns the bytes released so far and, once the stream is over,
// their digest.
func (r *ring) total() (int64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end, "sha256:" + hex.EncodeToString(r.sum.Sum(nil))
}

// SessionOutput is what ReadSession returns.
type SessionOutput struct {
	// Output is the session's output (stdout and stderr interleaved as
	// released, secrets redacted, terminal control characters shown as
	// visible escapes unless raw_output) from the cursor on; with a filter
	// only the matching lines.
	Output string `json:"output"`
	// Cursor is where the next read continues (pass it as since).
	Cursor int64 `json:"cursor"`
	// Dropped counts the bytes after the requested cursor that left the
	// ring (max_output_bytes) before they were read.
	Dropped int64 `json:"dropped_bytes,omitempty"`
	// Filtered counts the lines a filter left out.
	Filtered int `json:"filtered_lines,omitempty"`
	// Session is the session as it stands after the read.
	Session SessionInfo `json:"session"`
}

// maxFilter bounds the filter expression (RE2: linear time however long).
const maxFilter = 1024

// ReadSession returns a session's output from cursor since on. With wait
// it waits up to wait for output past since, or the session's end, or
// ctx's; filter keeps only the lines it matches (Go RE2 syntax). It
// refuses an unknown session (NOT_FOUND) and a filter that does not
// compile (INVALID_REQUEST).
func (r *Runner) ReadSession(ctx context.Context, id string, since int64, wait time.Duration, filter string) (SessionOutput, error) {
	s, err := r.sessions.get(id)
	if err != nil {
		return SessionOutput{}, err
	}
	var re *regexp.Regexp
	if filter != "" {
		if len(filter) > maxFilter {
			return SessionOutput{}, result.New(result.InvalidRequest, fmt.Sprintf("the filter is longer than %d bytes", maxFilter))
		}
		if re, err = regexp.Compile(filter); err != nil {
			return SessionOutput{}, result.New(result.InvalidRequest, "the filter is not a valid regular expression (Go RE2 syntax): "+err.Error())
		}
	}
	s.touch()
	text, next, dropped, changed := s.out.since(since)
	if len(text) == 0 && wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-changed:
		case <-s.done:
		case <-t.C:
		case <-ctx.Done():
		}
		text, next, dropped, _ = s.out.since(since)
	}
	o := SessionOutput{Cursor: next, Dropped: dropped}
	if re != nil {
		text, o.Filtered = filterLines(text, re)
	}
	o.Output = string(text)
	o.Session = s.info()
	return o, nil
}

// filterLines keeps the lines of text that re matches, and counts the
// others.
func filterLines(text []byte, re *regexp.Regexp) ([]byte, int) {
	var out []byte
	dropped := 0
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		if re.Match(bytes.TrimSuffix(line, []byte("\n"))) {
			out = append(out, line...)
		} else {
			dropped++
		}
	}
	return out, dropped
}
