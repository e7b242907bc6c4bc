package terminal

import (
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// sessionEnv is a terminald in the sandbox profile where sh and python3
// run, with room for several sessions.
func sessionEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	return newEnv(t, append([]envOpt{func(o *Options) {
		o.Policy = command.Policy{Sandboxed: true, Allow: []string{"sh", "python3"}}
		o.Sandboxed = true
		o.Path = []string{"/usr/local/bin", "/usr/bin", "/bin"}
		o.MaxConcurrent = 6
	}}, opts...)...)
}

func (r res) session() map[string]any { m, _ := r.Detail["session"].(map[string]any); return m }

// readUntil calls read_output from the start until the output contains
// want (or, with want "", until the session has ended).
func (e *env) readUntil(t *testing.T, id, want string) (res, string) {
	t.Helper()
	var all strings.Builder
	cursor := 0.0
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.call(t, "read_output", map[string]any{"session_id": id, "since": cursor, "wait_ms": 500})
		if r.Code != "OK" {
			t.Fatalf("read_output: %s (%s)", r.Code, r.Reason)
		}
		all.WriteString(r.str("output"))
		cursor, _ = r.Detail["cursor"].(float64)
		if (want != "" && strings.Contains(all.String(), want)) || (want == "" && r.session()["ended"] != nil) {
			return r, all.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: %q never came; output %q", id, want, all.String())
		}
	}
}

// TestSessionToolsDriveAPythonREPL: run_command in the background starts
// a Python REPL; send_input gives it 1+1; read_output shows 2; eof ends it
// with status 0; list_sessions shows how it ended.
func TestSessionToolsDriveAPythonREPL(t *testing.T) {
	e := sessionEnv(t)
	r := e.call(t, "run_command", map[string]any{"command": "python3 -i -u -q", "background": true})
	if r.Code != "OK" || !r.OK {
		t.Fatalf("start: %s (%s)", r.Code, r.Reason)
	}
	id, _ := r.session()["session_id"].(string)
	if id == "" || r.str("confinement") == "" {
		t.Fatalf("start detail: %v", r.Detail)
	}
	if in := e.call(t, "send_input", map[string]any{"session_id": id, "text": "1+1\n"}); in.Code != "OK" {
		t.Fatalf("send_input: %s (%s)", in.Code, in.Reason)
	}
	e.readUntil(t, id, "2\n")
	if in := e.call(t, "send_input", map[string]any{"session_id": id, "eof": true}); in.Code != "OK" {
		t.Fatalf("send_input eof: %s (%s)", in.Code, in.Reason)
	}
	end, _ := e.readUntil(t, id, "")
	if s := end.session(); s["state"] != "exited" || s["exit_code"] != float64(0) {
		t.Fatalf("after eof: %v", s)
	}
	l := e.call(t, "list_sessions", map[string]any{})
	ss, _ := l.Detail["sessions"].([]any)
	if l.Code != "OK" || len(ss) != 1 || l.Detail["running"] != float64(0) {
		t.Fatalf("list_sessions: %v", l.Detail)
	}
	if in := e.call(t, "send_input", map[string]any{"session_id": id, "text": "x"}); in.Code != "OPERATION_FAILED" {
		t.Fatalf("input to an ended session: %s", in.Code)
	}
}

// TestSessionOutputIsNeutralisedAndFiltered: escape sequences a session
// prints come back as visible escapes; a filter keeps only matching lines.
func TestSessionOutputIsNeutralisedAndFiltered(t *testing.T) {
	e := sessionEnv(t)
	r := e.call(t, "run_command", map[string]any{"background": true, "wait_ms": 5000,
		"command": `sh -c 'printf "\033]52;c;aGk=\007 ok\nFAIL one\npass two\nFAIL three\n"'`})
	id, _ := r.session()["session_id"].(string)
	if r.Code != "OK" || id == "" {
		t.Fatalf("start: %s (%s)", r.Code, r.Reason)
	}
	_, all := e.readUntil(t, id, "")
	if strings.ContainsAny(all, "\x1b\x07") || !strings.Contains(all, `\x1b]52`) {
		t.Fatalf("output not neutralised: %q", all)
	}
	f := e.call(t, "read_output", map[string]any{"session_id": id, "filter": "^FAIL"})
	if f.str("output") != "FAIL one\nFAIL three\n" || f.Detail["filtered_lines"] != float64(2) {
		t.Fatalf("filtered: %q %v", f.str("output"), f.Detail["filtered_lines"])
	}
	if bad := e.call(t, "read_output", map[string]any{"session_id": id, "filter": "("}); bad.Code != "INVALID_REQUEST" {
		t.Fatalf("a bad filter: %s", bad.Code)
	}
}

// TestSessionBeyondMaxIsRefusedThroughTheClient: past [terminal.sessions]
// max, run_command in the background answers LIMIT_EXCEEDED with
// detail.limit "sessions"; stop_session frees the place.
func TestSessionBeyondMaxIsRefusedThroughTheClient(t *testing.T) {
	e := sessionEnv(t, func(o *Options) { o.SessionsMax = 1 })
	r := e.call(t, "run_command", map[string]any{"command": "sh -c 'sleep 60'", "background": true})
	id, _ := r.session()["session_id"].(string)
	if r.Code != "OK" || id == "" {
		t.Fatalf("start: %s (%s)", r.Code, r.Reason)
	}
	second := e.call(t, "run_command", map[string]any{"command": "sh -c 'sleep 60'", "background": true})
	if second.Code != "LIMIT_EXCEEDED" || second.Detail["limit"] != "sessions" || second.OK {
		t.Fatalf("second session: %s %v (%s)", second.Code, second.Detail, second.Reason)
	}
	st := e.call(t, "stop_session", map[string]any{"session_id": id})
	if st.Code != "OK" || st.session()["state"] != "stopped" {
		t.Fatalf("stop_session: %s %v", st.Code, st.session())
	}
	if again := e.call(t, "run_command", map[string]any{"command": "sh -c 'sleep 60'", "background": true}); again.Code != "OK" {
		t.Fatalf("after the stop: %s (%s)", again.Code, again.Reason)
	}
	if unknown := e.call(t, "read_output", map[string]any{"session_id": "s-nope"}); unknown.Code != "NOT_FOUND" {
		t.Fatalf("unknown session: %s", unknown.Code)
	}
	if w := e.call(t, "run_command", map[string]any{"command": "sh -c 'true'", "wait_ms": 10}); w.Code != "INVALID_REQUEST" {
		t.Fatalf("wait_ms without background: %s", w.Code)
	}
}

// TestSessionToolsDriveAPythonREPLOnATerminal: with tty: true, python3
// runs its interactive prompt on a pseudo-terminal; 1+1 gives 2; the
// terminal's end of input ends it with status 0.
func TestSessionToolsDriveAPythonREPLOnATerminal(t *testing.T) {
	e := sessionEnv(t)
	r := e.call(t, "run_command", map[string]any{"command": "python3", "background": true, "tty": true})
	id, _ := r.session()["session_id"].(string)
	if r.Code != "OK" || id == "" {
		t.Fatalf("start: %s (%s)", r.Code, r.Reason)
	}
	e.readUntil(t, id, ">>> ")
	if in := e.call(t, "send_input", map[string]any{"session_id": id, "text": "1+1\n"}); in.Code != "OK" {
		t.Fatalf("send_input: %s (%s)", in.Code, in.Reason)
	}
	// The end of input waits for the prompt: typed ahead of readline's
	// prompt, a terminal's end of input can be lost.
	e.readUntil(t, id, "\n2\n>>> ")
	if in := e.call(t, "send_input", map[string]any{"session_id": id, "eof": true}); in.Code != "OK" {
		t.Fatalf("eof: %s (%s)", in.Code, in.Reason)
	}
	end, all := e.readUntil(t, id, "")
	if s := end.session(); s["state"] != "exited" || s["exit_code"] != float64(0) || strings.ContainsAny(all, "\x1b\r") {
		t.Fatalf("after eof: %v, output %q", s, all)
	}
}

// TestSessionToolsHoldUnprivileged runs the session tool tests again with
// the server as an unprivileged user.
func TestSessionToolsHoldUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestSessionToolsDriveAPythonREPL|TestSessionOutputIsNeutralisedAndFiltered|"+
		"TestSessionBeyondMaxIsRefusedThroughTheClient|TestSessionToolsDriveAPythonREPLOnATerminal)$", examplePolicy)
}
