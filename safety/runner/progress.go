package runner

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/redact"
)

// RunProgress is where a running command stands, as reported to
// Request.Running about once a second while it runs.
type RunProgress struct {
	// Elapsed is how long the command has run so far.
	Elapsed time.Duration
	// Lines are the latest complete lines the command wrote to stdout and
	// stderr (interleaved as they came), oldest first: at most
	// progressLines, each cut at progressLineBytes, secrets redacted and
	// (unless raw_output) terminal control characters shown as visible
	// escapes. A line that is one long run of base64 characters is
	// replaced by a placeholder: out of its context (a PEM block's
	// header), the redaction could not tell it from a key.
	Lines []string
}

// Message is the report as text for a person: the time and the lines.
func (p RunProgress) Message() string {
	head := fmt.Sprintf("running for %s", p.Elapsed.Round(time.Second))
	if len(p.Lines) == 0 {
		return head + "; no output yet"
	}
	return head + "; latest output:\n" + strings.Join(p.Lines, "\n")
}

// What a progress report carries of the output.
const (
	progressLines     = 5
	progressLineBytes = 200
	// progressTail is how much of the latest output is kept for the
	// reports: enough for progressLines lines of any sensible length.
	progressTail = 4096
)

// outputTail keeps the last progressTail bytes the command wrote, for the
// progress reports. It never fails a write.
type outputTail struct {
	mu      sync.Mutex
	buf     []byte
	wrapped bool // bytes before buf[0] were dropped
}

func (t *outputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf) - progressTail; n > 0 {
		t.buf = append(t.buf[:0], t.buf[n:]...)
		t.wrapped = true
	}
	return len(p), nil
}

// lines returns the latest complete lines, redacted with set and
// neutralised unless raw. The first line of a buffer that lost its start
// and the line still being written are left out: either could hold part
// of a secret the redaction would not recognise.
func (t *outputTail) lines(set *redact.Set, raw bool) []string {
	t.mu.Lock()
	b := bytes.Clone(t.buf)
	wrapped := t.wrapped
	t.mu.Unlock()
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		return nil
	}
	b = b[:end]
	if wrapped {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	b, _ = set.Redact(b)
	if !raw {
		b, _ = redact.Neutralise(b)
	}
	all := strings.Split(string(b), "\n")
	if len(all) > progressLines {
		all = all[len(all)-progressLines:]
	}
	out := make([]string, 0, len(all))
	for _, l := range all {
		l = strings.TrimRight(l, "\r")
		if base64Run(l) {
			l = "[a long base64 line, left out of progress]"
		}
		if len(l) > progressLineBytes {
			l = strings.ToValidUTF8(l[:progressLineBytes], "") + "..."
		}
		out = append(out, l)
	}
	return out
}

// base64Run reports whether l is 40 or more characters of the base64
// alphabets and nothing else.
func base64Run(l string) bool {
	if len(l) < 40 {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// reportRunning calls report with the command's progress every
// progressEvery until stop is closed.
func reportRunning(report func(RunProgress), tail *outputTail, set *redact.Set, raw bool, stop <-chan struct{}) {
	start := time.Now()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			report(RunProgress{Elapsed: time.Since(start), Lines: tail.lines(set, raw)})
		}
	}
}
