package runner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// A session is a command that keeps running after the call that started
// it (a dev server, a watcher, a REPL, a long build): StartSession runs it
// through the same pipeline as Run (policy, ask tier and approval, the
// working directory anchored in the jail, a max_concurrent slot, the
// intent record before anything runs) in a sandbox of its own with every
// per-command limit but the timeout, which the session's idle and
// lifetime bounds replace. Its output is redacted as it streams
// (redact.LiveWriter) into a ring of max_output_bytes; ReadSession reads
// it, SendInput writes its standard input, StopSession ends it (SIGTERM
// to every process, then SIGKILL), Sessions lists them. A session ends,
// with every process it started, when it exits, is stopped, passes its
// idle or lifetime bound, or the runner closes (and with the server,
// kill -9 included: the sandbox helper dies with it).

// The limits a session's end or refusal names (Outcome.Limit,
// SessionInfo.Limit).
const (
	// LimitSessions: [terminal.sessions] max sessions were alive.
	LimitSessions = "sessions"
	// LimitIdle: the session was idle for [terminal.sessions] idle_minutes.
	LimitIdle = "idle"
	// LimitLifetime: the session ran for max_lifetime_minutes.
	LimitLifetime = "lifetime"
)

// The states of a session.
const (
	SessionStarting = "starting"
	SessionRunning  = "running"
	// SessionExited: the command ended by itself (ExitCode, Signal, and
	// Limit when a per-command limit stopped it).
	SessionExited = "exited"
	// SessionStopped: stop_session ended it.
	SessionStopped = "stopped"
	// SessionExpired: its idle or lifetime bound ended it (Limit).
	SessionExpired = "expired"
	// SessionFailed: it could not be started (Code, Reason).
	SessionFailed = "failed"
)

// stopGrace is how long a stopped session has between SIGTERM and SIGKILL.
const stopGrace = 2 * time.Second

// inputWait bounds how long SendInput waits for a command that does not
// read its input (a full pipe).
const inputWait = 2 * time.Second

// keepEnded is how many ended sessions stay readable.
const keepEnded = 16

// SessionInfo is one session as listed.
type SessionInfo struct {
	ID      string    `json:"session_id"`
	Command string    `json:"command"`
	Cwd     string    `json:"cwd"`
	Started time.Time `json:"started"`
	State   string    `json:"state"`
	// ExitCode and Signal are the command's end (ended sessions).
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Limit names what ended it: LimitIdle, LimitLifetime, or a
	// per-command limit (sandbox.LimitMemory...).
	Limit string `json:"limit,omitempty"`
	// OutputBytes is the output released so far (after redaction).
	OutputBytes int64 `json:"output_bytes"`
	// Ended is when it ended; Reason says how, or why it failed.
	Ended  *time.Time `json:"ended,omitempty"`
	Reason string     `json:"reason,omitempty"`
	// Ports are its published ports ([terminal.sessions] publish_ports):
	// the port inside and the URL on the host's 127.0.0.1.
	Ports []sandbox.PortEvent `json:"ports,omitempty"`
}

// session is one live or ended session.
type session struct {
	r       *Runner
	id      string
	command string // redacted line
	cwd     string
	started time.Time
	intent  string

	out            *ring
	stdout, stderr *redact.LiveWriter
	stdin          *os.File // write end (a terminal's primary side with tty); nil once closed
	tty            bool
	inMu           sync.Mutex

	cancel   context.CancelFunc
	term     chan struct{}
	termOnce sync.Once
	begun    chan struct{} // closed when the command was handed over (or failed)
	done     chan struct{} // closed once it ended and its outcome is recorded
	active   atomic.Int64  // unix nanos of the last output, read or input

	mu       sync.Mutex
	ports    []sandbox.PortEvent
	state    string
	endedBy  string // SessionStopped or SessionExpired, with limit
	limit    string
	exitCode int
	signal   string
	ended    time.Time
	reason   string
	code     result.Code
}

// sessionSet is the runner's sessions.
type sessionSet struct {
	mu     sync.Mutex
	live   map[string]*session
	ended  []*session
	closed bool
	wg     sync.WaitGroup
}

func (ss *sessionSet) get(id string) (*session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.live[id]; ok {
		return s, nil
	}
	for _, s := range ss.ended {
		if s.id == id {
			return s, nil
		}
	}
	return nil, result.New(result.NotFound, "no session "+fmt.Sprintf("%q", id)+
		" (it never existed, or it ended long enough ago to be forgotten): list_sessions shows the sessions")
}

func (s *session) touch() { s.active.Store(time.Now().UnixNano()) }

// info is the session as listed now.
func (s *session) info() SessionInfo {
	n, _ := s.out.total()
	s.mu.Lock()
	defer s.mu.Unlock()
	i := SessionInfo{ID: s.id, Command: s.command, Cwd: s.cwd, Started: s.started, State: s.state,
		Limit: s.limit, OutputBytes: n, Reason: s.reason, Ports: slices.Clone(s.ports)}
	if !s.ended.IsZero() {
		e := s.ended
		i.Ended = &e
		if s.state != SessionFailed {
			c := s.exitCode
			i.ExitCode, i.Signal = &c, s.signal
		}
	}
	return i
}

// SessionRequest is a session to start.
type SessionRequest struct {
	Request
	// Wait is how long the answer waits for early output or the
	// command's end (0: it answers once the command has started).
	Wait time.Duration
	// TTY runs the command on a pseudo-terminal (sandbox.OpenPTY) instead
	// of pipes: for programs that need one (prompts, line editing, colour).
	TTY bool
}

// StartSession starts a session (see the comment at the top of this
// file) and answers once the command has started, or after req.Wait of
// early output, or at its end if that comes first. The Outcome is a
// refusal (Ran false; LIMIT_EXCEEDED with Limit LimitSessions when
// [terminal.sessions] max are alive) or, for a session that started, its
// code OK; SessionOutput holds the output so far and the session.
func (r *Runner) StartSession(ctx context.Context, req SessionRequest) (Outcome, SessionOutput) {
	if err := r.sessions.room(r.o.SessionsMax); err != nil {
		out := r.refused(req.Line, err)
		out.Limit = LimitSessions
		return out, SessionOutput{}
	}
	j, err := r.judge(req.Request)
	if err != nil {
		if req.Answered && j.ev.Decision.Ask {
			err = errChanged("the command or its working directory changed ("+result.Reason(err)+")", err)
		}
		return r.refused(req.Line, err), SessionOutput{}
	}
	var v *approval.Verdict
	if j.ev.askErr != nil {
		j.dh.Close()
		verdict, out, ok := r.approve(ctx, req.Request, j)
		if !ok {
			return out, SessionOutput{}
		}
		if j, out, ok = r.recheck(req.Request, j, verdict); !ok {
			return out, SessionOutput{}
		}
		v = &verdict
	}
	j, release, out, ok := r.slot(ctx, req.Request, j)
	if !ok {
		if v != nil {
			v.Done(out.Code)
			out.Approval = v.Approval
		}
		return out, SessionOutput{}
	}
	s, out := r.launchSession(req.Line, req.TTY, j, release)
	if v != nil {
		v.Done(out.Code)
		out.Approval = v.Approval
	}
	if s == nil {
		return out, SessionOutput{}
	}
	<-s.begun
	if req.Wait > 0 {
		t := time.NewTimer(req.Wait)
		select {
		case <-s.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	so, _ := r.ReadSession(ctx, s.id, 0, 0, "")
	if so.Session.State == SessionFailed {
		s.mu.Lock()
		out = Outcome{Code: s.code, Reason: s.reason, Argv: out.Argv, Approval: out.Approval, Confinement: out.Confinement}
		s.mu.Unlock()
		return out, so
	}
	return out, so
}

// room refuses a start when max sessions are alive.
func (ss *sessionSet) room(max int) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return result.New(result.OperationFailed, "the server is shutting down: no session can start")
	}
	if len(ss.live) >= max {
		return result.New(result.LimitExceeded, fmt.Sprintf(
			"%d sessions are running ([terminal.sessions] max = %d): nothing was started; stop one with stop_session "+
				"(list_sessions shows them), or ask the person to raise [terminal.sessions] max", len(ss.live), max))
	}
	return nil
}

// launchSession writes the intent record and starts the judged command j
// as a session holding the slot release frees. It returns nil and the
// refusal when nothing started.
func (r *Runner) launchSession(line string, tty bool, j judged, release func()) (*session, Outcome) {
	ss := &r.sessions
	ev := j.ev
	argv := ev.Decision.Argv
	fail := func(err error) (*session, Outcome) {
		j.dh.Close()
		release()
		return nil, refusal(err)
	}
	// Reserve the session's place, so that concurrent starts cannot pass max.
	ss.mu.Lock()
	if ss.closed || len(ss.live) >= r.o.SessionsMax {
		ss.mu.Unlock()
		err := ss.room(r.o.SessionsMax)
		if err == nil {
			err = result.New(result.LimitExceeded, "another session took the last place: nothing was started")
		}
		out := refusal(err)
		out.Limit = LimitSessions
		j.dh.Close()
		release()
		return nil, out
	}
	s := &session{r: r, id: ids.New("s"), command: neutralised(r.redactLine(line)), cwd: j.dir, started: time.Now(),
		state: SessionStarting, term: make(chan struct{}), begun: make(chan struct{}), done: make(chan struct{})}
	if ss.live == nil {
		ss.live = map[string]*session{}
	}
	ss.live[s.id] = s
	ss.wg.Add(1)
	ss.mu.Unlock()
	forget := func() {
		ss.mu.Lock()
		delete(ss.live, s.id)
		ss.mu.Unlock()
		ss.wg.Done()
	}

	intent, err := r.o.Audit.Intent("session", map[string]any{"session": s.id, "argv": r.redactArgv(argv), "cwd": j.dir,
		"executable": ev.Executable, "rule": ev.Decision.Rule, "idle_s": int(r.o.SessionIdle.Seconds()),
		"lifetime_s": int(r.o.SessionLifetime.Seconds())})
	if err != nil {
		forget()
		return fail(err)
	}
	s.intent = intent
	var stdinR, stdinW *os.File
	if tty {
		stdinW, stdinR, err = sandbox.OpenPTY()
	} else if stdinR, stdinW, err = os.Pipe(); err != nil {
		err = result.Wrap(result.InternalError, "the session's input pipe could not be created", err)
	}
	if err != nil {
		forget()
		_ = r.o.Audit.Outcome(intent, "session", result.CodeOf(err), map[string]any{"session": s.id})
		return fail(err)
	}
	s.stdin, s.tty = stdinW, tty
	s.touch()
	s.out = newRing(r.o.MaxOutputBytes, s.touch)
	s.stdout = r.o.Redact.NewLiveWriter(!r.o.RawOutput, s.out.add)
	s.stderr = r.o.Redact.NewLiveWriter(!r.o.RawOutput, s.out.add)
	rd, err := r.takeRunDirs()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		forget()
		_ = r.o.Audit.Outcome(intent, "session", result.CodeOf(err), map[string]any{"session": s.id})
		return fail(err)
	}
	spec := r.spec(rd)
	spec.Path, spec.Argv, spec.Dir, spec.Env = ev.Executable, argv, j.dir, r.env(ev.Decision.Name)
	spec.Stdout, spec.Stderr, spec.Stdin = s.stdout, s.stderr, stdinR
	spec.Timeout, spec.Terminate, spec.TTY = 0, s.term, tty
	if r.o.PublishPorts {
		spec.Publish = s.publish
	}
	ttyRead := make(chan struct{})
	if tty {
		// The terminal's primary side carries all the command's output.
		go func() {
			defer close(ttyRead)
			buf := make([]byte, 32<<10)
			for {
				n, err := stdinW.Read(buf)
				if n > 0 {
					_, _ = s.stdout.Write(buf[:n])
				}
				if err != nil { // EIO once no process holds the terminal
					return
				}
			}
		}()
	} else {
		close(ttyRead)
	}
	var beginOnce sync.Once
	begin := func() { beginOnce.Do(func() { close(s.begun) }) }
	spec.Started = func() {
		s.mu.Lock()
		s.state = SessionRunning
		s.mu.Unlock()
		begin()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		outc, err := sandbox.Run(ctx, spec)
		stdinR.Close()
		j.dh.Close()
		if tty {
			// Every process of the command is gone: what it wrote is in
			// the terminal; read it, then stop reading.
			t := time.AfterFunc(250*time.Millisecond, func() { _ = stdinW.SetReadDeadline(time.Now()) })
			<-ttyRead
			t.Stop()
		}
		s.end(outc, err)
		release()
		begin()
		cancel()
		if r.closed.Load() {
			r.removeRunDir(rd.dir)
		} else {
			// As after a foreground run (execute): the pair goes back to
			// the pool and the next command's helper is prepared.
			r.recycle(rd)
			r.prepare()
		}
		ss.mu.Lock()
		delete(ss.live, s.id)
		ss.ended = append(ss.ended, s)
		if len(ss.ended) > keepEnded {
			ss.ended = ss.ended[1:]
		}
		ss.mu.Unlock()
		close(s.done)
		ss.wg.Done()
	}()
	go s.expire(r.o.SessionIdle, r.o.SessionLifetime)
	return s, Outcome{Ran: true, Code: result.OK, Argv: argv, Confinement: r.confinement,
		Reason: "the session started; read its output with read_output, stop it with stop_session"}
}

// publish records a port the session's command listens on being
// published on the host's loopback (an audit event first: a publication
// that cannot be recorded is withdrawn), or its publication ending.
func (s *session) publish(ev sandbox.PortEvent) error {
	action := "session.publish"
	if !ev.Open {
		action = "session.unpublish"
	}
	if err := s.r.o.Audit.Event(action, map[string]any{"session": s.id, "inside": ev.Inside, "url": ev.URL}); err != nil && ev.Open {
		return err
	}
	s.touch()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ports = slices.DeleteFunc(s.ports, func(p sandbox.PortEvent) bool { return p.Inside == ev.Inside })
	if ev.Open {
		s.ports = append(s.ports, ev)
	}
	return nil
}

// end records the session's end: its state, and the outcome record
// (exit status or limit, bytes of output, their digest).
func (s *session) end(outc sandbox.Outcome, err error) {
	s.stdout.Close()
	s.stderr.Close()
	s.inMu.Lock()
	if s.stdin != nil {
		s.stdin.Close()
		s.stdin = nil
	}
	s.inMu.Unlock()
	n, digest := s.out.total()
	s.mu.Lock()
	s.ended = time.Now()
	s.exitCode, s.signal = outc.ExitCode, outc.Signal
	code := result.OK
	switch {
	case outc.Duration == 0 && err != nil: // never started
		s.state = SessionFailed
		code, s.reason = result.Classify(err)
	case s.endedBy != "":
		s.state = s.endedBy
	default:
		s.state = SessionExited
		if outc.Limit != "" {
			s.limit = outc.Limit
			code, s.reason = result.Classify(err)
		}
	}
	if s.reason == "" {
		switch {
		case s.state == SessionExpired:
			s.reason = fmt.Sprintf("the session passed its %s bound ([terminal.sessions] %s) and was ended with every process it started",
				s.limit, map[string]string{LimitIdle: "idle_minutes", LimitLifetime: "max_lifetime_minutes"}[s.limit])
		case s.state == SessionStopped:
			s.reason = "the session was stopped; every process it started is gone"
		case outc.Signal != "":
			s.reason = "the command was ended by " + outc.Signal
		default:
			s.reason = fmt.Sprintf("the command exited with status %d", outc.ExitCode)
		}
	}
	s.code = code
	fields := map[string]any{"session": s.id, "state": s.state, "exit_code": outc.ExitCode,
		"duration_ms": time.Since(s.started).Milliseconds(), "output_bytes": n, "output_digest": digest,
		"stdout_bytes": s.stdout.TotalIn(), "stderr_bytes": s.stderr.TotalIn(),
		"redactions": s.stdout.Redactions() + s.stderr.Redactions(), "confinement": outc.Confinement}
	if outc.Signal != "" {
		fields["signal"] = outc.Signal
	}
	if s.limit != "" {
		fields["limit"] = s.limit
	}
	if len(outc.Protected) > 0 {
		fields["protected"] = outc.Protected
	}
	s.mu.Unlock()
	if aerr := s.r.o.Audit.Outcome(s.intent, "session", code, fields); aerr != nil {
		s.r.o.Logger.Error("audit outcome record failed", "intent", s.intent)
	}
}

// expire ends the session when it has been idle (no output, read or
// input) for idle, or has run for lifetime.
func (s *session) expire(idle, lifetime time.Duration) {
	life := time.NewTimer(lifetime)
	defer life.Stop()
	check := time.NewTimer(idle)
	defer check.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-life.C:
			s.stop(SessionExpired, LimitLifetime)
			return
		case <-check.C:
			left := idle - time.Since(time.Unix(0, s.active.Load()))
			if left <= 0 {
				s.stop(SessionExpired, LimitIdle)
				return
			}
			check.Reset(left)
		}
	}
}

// stop ends the session: SIGTERM to every process, then, stopGrace later
// (or at once with grace 0), SIGKILL. It returns once the session's end is
// recorded.
func (s *session) stop(by, limit string) {
	s.mu.Lock()
	if s.endedBy == "" && s.ended.IsZero() {
		s.endedBy, s.limit = by, limit
	}
	s.mu.Unlock()
	s.termOnce.Do(func() { close(s.term) })
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.cancel()
		<-s.done
	}
}

// StopSession stops a session (SIGTERM to every process, SIGKILL two
// seconds later) and returns it as it ended, with its last output from
// cursor since on. Stopping an ended session returns it unchanged.
func (r *Runner) StopSession(ctx context.Context, id string, since int64) (SessionOutput, error) {
	s, err := r.sessions.get(id)
	if err != nil {
		return SessionOutput{}, err
	}
	_ = r.o.Audit.Event("session.stop", map[string]any{"session": s.id})
	s.stop(SessionStopped, "")
	return r.ReadSession(ctx, id, since, 0, "")
}

// SendInput writes text to a session's standard input, then, with eof,
// closes it (the command reads end of input). Each input is an audit event
// (its text redacted, cut at 1 KiB) written before the input is given: an
// input that cannot be recorded is not given (AUDIT_UNAVAILABLE). It
// refuses an ended session and input after eof (OPERATION_FAILED), and a
// command that has not read its earlier input for inputWait (LIMIT_EXCEEDED).
func (r *Runner) SendInput(id, text string, eof bool) (SessionInfo, error) {
	s, err := r.sessions.get(id)
	if err != nil {
		return SessionInfo{}, err
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	if s.stdin == nil {
		return s.info(), result.New(result.OperationFailed,
			"the session's input is closed (it ended, or end of input was sent): nothing was written")
	}
	if err := r.o.Audit.Event("session.input", map[string]any{"session": s.id, "input": r.redactLine(text),
		"bytes": len(text), "eof": eof}); err != nil {
		return s.info(), err
	}
	s.touch()
	if text != "" {
		_ = s.stdin.SetWriteDeadline(time.Now().Add(inputWait))
		if _, err := s.stdin.WriteString(text); err != nil {
			if os.IsTimeout(err) {
				return s.info(), result.New(result.LimitExceeded,
					"the command did not read its input: the pipe is full and part of the input was not written")
			}
			return s.info(), result.New(result.OperationFailed, "the command no longer reads its input (it closed it or ended)")
		}
	}
	switch {
	case eof && s.tty:
		// A terminal's end of input is its EOF character (^D at the start
		// of a line); closing the primary side would hang it up instead.
		_ = s.stdin.SetWriteDeadline(time.Now().Add(inputWait))
		if _, err := s.stdin.WriteString("\x04"); err != nil {
			return s.info(), result.New(result.OperationFailed, "the command no longer reads its terminal")
		}
	case eof:
		s.stdin.Close()
		s.stdin = nil
	}
	return s.info(), nil
}

// Sessions lists the live sessions and the last ended ones, oldest first.
func (r *Runner) Sessions() []SessionInfo {
	ss := &r.sessions
	ss.mu.Lock()
	all := make([]*session, 0, len(ss.live)+len(ss.ended))
	for _, s := range ss.live {
		all = append(all, s)
	}
	all = append(all, ss.ended...)
	ss.mu.Unlock()
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		out = append(out, s.info())
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// closeSessions ends every live session at once (SIGKILL to all their
// processes) and waits until each has ended and been recorded; no session
// starts after it.
func (r *Runner) closeSessions() {
	ss := &r.sessions
	ss.mu.Lock()
	ss.closed = true
	live := make([]*session, 0, len(ss.live))
	for _, s := range ss.live {
		live = append(live, s)
	}
	ss.mu.Unlock()
	for _, s := range live {
		s.mu.Lock()
		if s.endedBy == "" {
			s.endedBy = SessionStopped
			s.reason = "the server shut down; the session was ended with every process it started"
		}
		s.mu.Unlock()
		if s.cancel != nil {
			s.cancel()
		}
	}
	ss.wg.Wait()
}

// neutralised shows the terminal control characters of s as visible
// escapes: a session's command line is part of every answer about it.
func neutralised(s string) string {
	b, _ := redact.Neutralise([]byte(s))
	return string(b)
}

// WaitSession waits for a session to end and returns it with its output
// from since on (what the ring still holds). When ctx ends first (a task's
// cancellation) the session is stopped as StopSession stops it: the call
// never leaves it running.
func (r *Runner) WaitSession(ctx context.Context, id string, since int64) (SessionOutput, error) {
	s, err := r.sessions.get(id)
	if err != nil {
		return SessionOutput{}, err
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		_ = r.o.Audit.Event("session.stop", map[string]any{"session": s.id, "why": "the call was cancelled"})
		s.stop(SessionStopped, "")
	}
	return r.ReadSession(context.WithoutCancel(ctx), id, since, 0, "")
}
