package terminal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// shEnv is a terminald in the sandbox profile where sh and printf run,
// with opts applied after.
func shEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	return newEnv(t, append([]envOpt{func(o *Options) {
		o.Policy = command.Policy{Sandboxed: true, Allow: []string{"sh", "printf"}}
		o.Sandboxed = true
		o.Timeout = 120 * time.Second
	}}, opts...)...)
}

// hostileFormat is a printf format that writes what a hostile command
// prints to a client's terminal: an OSC 52 clipboard write, an OSC 8
// link, screen clearing and cursor movement (CSI), a carriage return that
// overwrites the line, a NUL, a BEL, a right-to-left override that
// reverses a file name, C1 CSI as a rune, and ordinary text, UTF-8
// included.
const hostileFormat = `\033]52;c;cm0gLXJmIH4K\007 \033]8;;https://evil.example/\033\\safe link\033]8;;\033\\ ` +
	`\033[2J\033[1;1Hhidden\rshown \000 \007 invoice\342\200\256fdp.exe \302\233 31m caf\303\251 \344\270\226\n`

// hostileRaw is what printf writes for hostileFormat.
const hostileRaw = "\x1b]52;c;cm0gLXJmIH4K\x07 \x1b]8;;https://evil.example/\x1b\\safe link\x1b]8;;\x1b\\ " +
	"\x1b[2J\x1b[1;1Hhidden\rshown \x00 \x07 invoice\u202efdp.exe \u009b 31m café 世\n"

// TestEscapeSequencesNeverReachTheAnswerRaw: a command printing OSC 52,
// OSC 8, CSI, CR, NUL, BEL, C1 and bidi sequences on stdout and stderr
// gets them back as visible escapes only, counted in detail.neutralised
// and in the audit outcome record; UTF-8 text is intact.
func TestEscapeSequencesNeverReachTheAnswerRaw(t *testing.T) {
	e := shEnv(t)
	r := e.run(t, `sh -c 'printf "$0"; printf "$0" >&2' '`+hostileFormat+`'`)
	if r.Code != "OK" || r.exit() != 0 {
		t.Fatalf("run: %s %s", r.Code, r.text)
	}
	want, n := redact.Neutralise([]byte(hostileRaw))
	for _, stream := range []string{"stdout", "stderr"} {
		got := r.str(stream)
		if got != string(want) {
			t.Fatalf("%s = %q, want %q", stream, got, want)
		}
		for _, raw := range []string{"\x1b", "\x07", "\x00", "\r", "\u202e", "\u009b"} {
			if strings.Contains(got, raw) || strings.Contains(r.text, raw) {
				t.Fatalf("%q reaches the answer raw in %s", raw, stream)
			}
		}
		if !strings.Contains(got, `\x1b]52;c;`) || !strings.Contains(got, `invoice\u202efdp.exe`) || !strings.Contains(got, "café 世") {
			t.Fatalf("%s does not show the escapes or lost text: %q", stream, got)
		}
	}
	if got, _ := r.Detail["neutralised"].(float64); int(got) != 2*n || n != 13 {
		t.Fatalf("detail.neutralised = %v, want %d (2 x %d)", r.Detail["neutralised"], 2*n, n)
	}
	recs := e.AuditRecords(t)
	last := recs[len(recs)-1]
	fields, _ := last["fields"].(map[string]any)
	if last["kind"] != "outcome" || fields["neutralised"] != float64(2*n) {
		t.Fatalf("audit outcome record: %v", last)
	}
}

// TestRawOutputPassesEscapeSequencesThrough: with [terminal] raw_output =
// true the same output arrives as the command wrote it, and
// detail.neutralised is 0.
func TestRawOutputPassesEscapeSequencesThrough(t *testing.T) {
	e := shEnv(t, func(o *Options) { o.RawOutput = true })
	r := e.run(t, `printf '`+hostileFormat+`'`)
	if r.Code != "OK" || r.str("stdout") != hostileRaw {
		t.Fatalf("raw_output: %s stdout %q, want %q", r.Code, r.str("stdout"), hostileRaw)
	}
	if got, ok := r.Detail["neutralised"].(float64); !ok || got != 0 {
		t.Fatalf("detail.neutralised = %v with raw_output", r.Detail["neutralised"])
	}
}

// TestNeutralisedOutputIsCappedAfterNeutralising: the cap bounds what the
// client receives, escapes included, and cuts none in half.
func TestNeutralisedOutputIsCappedAfterNeutralising(t *testing.T) {
	e := shEnv(t, func(o *Options) { o.MaxOutputBytes = 10 })
	r := e.run(t, `printf '\033\033\033\033\033\033\033\033'`)
	if r.Code != "OUTPUT_TRUNCATED" || r.str("stdout") != `\x1b\x1b` || r.Detail["neutralised"] != float64(2) {
		t.Fatalf("capped: %s stdout %q neutralised %v", r.Code, r.str("stdout"), r.Detail["neutralised"])
	}
}

// callWithToken calls run_command with a progressToken.
func callWithToken(t *testing.T, e *env, line, token string) mcpkittest.Result {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = "run_command"
	req.Params.Arguments = map[string]any{"command": line}
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	res, err := e.c.CallTool(context.Background(), req)
	if err != nil {
		t.Errorf("CallTool: %v", err)
		return mcpkittest.Result{}
	}
	return mcpkittest.Parse(t, res)
}

// TestQueuedCallReportsProgressAndFullQueueIsRefused: with max_concurrent
// = 1 and max_queued = 1, a call behind a running command waits, and its
// client, which sent a progressToken, gets notifications/progress saying
// where it stands; a third call finds the queue full and is refused with
// LIMIT_EXCEEDED and detail.limit = "concurrency", running nothing.
func TestQueuedCallReportsProgressAndFullQueueIsRefused(t *testing.T) {
	e := shEnv(t, func(o *Options) { o.MaxConcurrent, o.MaxQueued = 1, 1 })
	var mu sync.Mutex
	var progress []map[string]any
	e.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	seen := func(token, word string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range progress {
			if m, _ := p["message"].(string); p["progressToken"] == token && strings.Contains(m, word) {
				return true
			}
		}
		return false
	}
	var wg sync.WaitGroup
	results := make([]mcpkittest.Result, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[0] = callWithToken(t, e, `sh -c 'touch started; sleep 2.5'`, "hold")
	}()
	waitUntil(t, func() bool { _, err := os.Stat(filepath.Join(e.Jail, "started")); return err == nil })
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[1] = callWithToken(t, e, `sh -c 'echo queued'`, "q-1")
	}()
	waitUntil(t, func() bool { return seen("q-1", "position 1 of 1") })

	full := e.run(t, `sh -c 'touch refused'`)
	if full.Code != "LIMIT_EXCEEDED" || full.str("limit") != "concurrency" || !strings.Contains(full.Reason, "max_queued = 1") {
		t.Fatalf("a call beyond the full queue: %s %s", full.Code, full.text)
	}
	wg.Wait()
	if results[0].Code != "OK" || results[1].Code != "OK" {
		t.Fatalf("held call %s, queued call %s (%s)", results[0].Code, results[1].Code, results[1].Reason)
	}
	var d map[string]any
	results[1].DecodeDetail(t, &d)
	if d["stdout"] != "queued\n" {
		t.Fatalf("queued call's stdout %q", d["stdout"])
	}
	waitUntil(t, func() bool { return seen("q-1", "got a slot") })
	if seen("hold", "slot") {
		t.Fatal("a call that did not wait reported queue progress")
	}
	if _, err := os.Stat(filepath.Join(e.Jail, "refused")); err == nil {
		t.Fatal("the refused call ran")
	}
}

// waitUntil polls cond for up to 30 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 30 s")
}

// TestOutputAndQueueHoldUnprivileged runs the tests above again with the
// server as an unprivileged user.
func TestOutputAndQueueHoldUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestEscapeSequencesNeverReachTheAnswerRaw|TestRawOutputPassesEscapeSequencesThrough|"+
		"TestNeutralisedOutputIsCappedAfterNeutralising|TestQueuedCallReportsProgressAndFullQueueIsRefused)$",
		examplePolicy)
}

// TestForegroundProgressCarriesLatestOutputLines: while a command runs, a
// call with a progressToken gets notifications/progress about once a
// second with the latest complete output lines, secrets redacted: the
// command prints two lines (one holding an access key id) and a partial
// line, then waits for the test. The test sees the first line in a report,
// the key only as a redaction marker, never the partial line, and then
// lets the command end; the answer is OK with the whole output.
func TestForegroundProgressCarriesLatestOutputLines(t *testing.T) {
	e := shEnv(t)
	var mu sync.Mutex
	var messages []string
	e.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "fg-1" {
			m, _ := n.Params.AdditionalFields["message"].(string)
			mu.Lock()
			messages = append(messages, m)
			mu.Unlock()
		}
	})
	latest := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(messages) == 0 {
			return ""
		}
		return messages[len(messages)-1]
	}
	done := make(chan mcpkittest.Result, 1)
	go func() {
		done <- callWithToken(t, e, `sh -c 'echo first-line; echo "key id AK""IAEXAMPLEKEY234567 in use"; printf partial-line; `+
			`while [ ! -e release ]; do sleep 0.1; done; echo last-line'`, "fg-1")
	}()
	waitUntil(t, func() bool { return strings.Contains(latest(), "first-line") })
	m := latest()
	if !strings.Contains(m, "running for") || !strings.Contains(m, "[REDACTED:") || strings.Contains(m, "EXAMPLEKEY234567") ||
		strings.Contains(m, "partial-line") {
		t.Fatalf("progress message %q: want the time, the first line, the key redacted and no partial line", m)
	}
	if err := os.WriteFile(filepath.Join(e.Jail, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var d map[string]any
	r.DecodeDetail(t, &d)
	if r.Code != "OK" || !strings.Contains(d["stdout"].(string), "partial-linelast-line") {
		t.Fatalf("the command's answer: %s %v", r.Code, d)
	}
}
