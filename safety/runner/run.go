package runner

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// Request is one command to run.
type Request struct {
	// Line is the command line, judged by the command policy.
	Line string
	// Cwd is the working directory: relative to the jail root, or absolute
	// inside it; "" is the jail root.
	Cwd string
	// Ask asks the person about an ask decision through the tool call
	// that brought the line (approval.Asker.Ask bound to its request).
	// Nil: no person can be asked, and an ask decision is refused with
	// NEEDS_EXPLICIT_REQUEST.
	Ask AskFunc
	// Answered reports that the call carries a person's answer to an
	// earlier question (a 2026-07-28 retry): an ask decision whose working
	// directory or executable is gone by then is STALE.
	Answered bool
	// Progress, when not nil, is told where the call stands while it waits
	// for a slot (max_concurrent commands running): at once, then every
	// second, and when it gets one. A call that does not wait never calls it.
	Progress func(QueueProgress)
	// Running, when not nil, is told where the command stands while it
	// runs, about once a second (RunProgress: the time so far and the
	// latest output lines, redacted). A command that ends within the first
	// second is never reported.
	Running func(RunProgress)
}

// Outcome is what Run did.
type Outcome struct {
	// Ran reports whether the command started. When it did not, Code and
	// Reason say why (a refusal, the audit log, or a sandbox that could not
	// start it) and Err is the error behind them.
	Ran bool
	// Code is OK when the command ran to its end within its limits (any
	// exit status), OUTPUT_TRUNCATED when it did but its output was cut, and
	// the refusal's or failure's code otherwise (TIMEOUT, RESOURCE_LIMIT...).
	Code result.Code
	// Reason is the client-safe sentence for Code.
	Reason string
	Err    error
	// Argv is the argument vector that ran (as parsed, not redacted).
	Argv []string
	// ExitCode, Signal, Limit and Confinement are the sandbox's
	// (sandbox.Outcome). Limit is also LimitConcurrency for a call refused
	// because no slot was free (Ran false).
	ExitCode    int
	Signal      string
	Limit       string
	Confinement string
	// Stdout and Stderr are the output, secrets redacted, each capped at
	// MaxOutputBytes after redaction; Truncated reports a cut.
	Stdout, Stderr []byte
	Truncated      bool
	// Protected lists each protected path the command created, changed or
	// removed, and how it was undone (detail.protected); ReadOnly the
	// protected paths that were read-only to it.
	Protected []protect.Change
	ReadOnly  []string
	// Neutralised counts the terminal control characters shown as visible
	// escapes in Stdout and Stderr (0 with raw_output).
	Neutralised int
	// Refused lists what the sandbox refused the command during its run
	// (detail.sandbox_refused; refusals.go); the reason names the key
	// that would allow each.
	Refused []Refusal
	// Approval is detail.approval for a line that needed a person's
	// approval: who approved it and how, or how it was refused.
	Approval *approval.Approval
	// Pending reports that the answer is a question for the person (a
	// 2026-07-28 client): the input request is set, nothing ran, and the
	// Outcome is not sent; the client's retry carries the answer.
	Pending bool
}

// refusal is the Outcome of a request that ran nothing.
func refusal(err error) Outcome {
	code, reason := result.Classify(err)
	return Outcome{Code: code, Reason: reason, Err: err}
}

// Run runs one command through the whole pipeline (see the package doc)
// and returns its outcome. A refusal is an audit event; a command that was
// allowed gets an intent record before it starts and an outcome record
// after, and an intent that cannot be written runs nothing. An ask
// decision runs only after a person approves it (approve), and only if
// the line judged again afterwards (recheck) names the same executable
// and working directory; nothing is held open while the person decides.
func (r *Runner) Run(ctx context.Context, req Request) Outcome {
	_, span := telemetry.Start(ctx, "policy.decide")
	j, err := r.judge(req)
	if err != nil {
		span.Code(string(result.CodeOf(err)))
	}
	span.Set(telemetry.String("bastion.rule", j.ev.Decision.Rule))
	span.End()
	if err != nil {
		if req.Answered && j.ev.Decision.Ask {
			err = errChanged("the command or its working directory changed ("+result.Reason(err)+")", err)
		}
		return r.refused(req.Line, err)
	}
	var v *approval.Verdict
	if j.ev.askErr != nil {
		j.dh.Close()
		verdict, out, ok := r.approve(ctx, req, j)
		if !ok {
			return out
		}
		if j, out, ok = r.recheck(req, j, verdict); !ok {
			return out
		}
		v = &verdict
	}
	j, release, out, ok := r.slot(ctx, req, j)
	if !ok {
		if v != nil {
			v.Done(out.Code)
			out.Approval = v.Approval
		}
		return out
	}
	defer release()
	defer j.dh.Close()
	out = r.start(ctx, j, req.Running)
	if v != nil {
		v.Done(out.Code)
		out.Approval = v.Approval
	}
	return out
}

// judge evaluates the line and opens its working directory in the jail.
// The error is why it cannot run: the policy refuses it (an ask decision
// is not refused here), the working directory cannot be opened or the
// executable is not found; j.ev is set even then. Without an error the
// caller closes j.dh.
func (r *Runner) judge(req Request) (judged, error) {
	ev := r.Evaluate(req.Line)
	if ev.policyErr != nil {
		return judged{ev: ev}, ev.policyErr
	}
	dir, dh, err := r.cwd(req.Cwd)
	if err != nil {
		return judged{ev: ev}, err
	}
	if ev.askErr == nil && ev.Err != nil {
		dh.Close()
		return judged{ev: ev}, ev.Err
	}
	return judged{ev: ev, dir: dir, dh: dh, id: dh.Info().ID}, nil
}

// start writes the intent record and runs the judged command.
func (r *Runner) start(ctx context.Context, j judged, running func(RunProgress)) Outcome {
	ev, dir := j.ev, j.dir
	argv := ev.Decision.Argv
	// The intent is written now and fsync'd (on this goroutine's thread)
	// while the sandbox starts the command, which it holds stopped before
	// its first instruction until the record is durable
	// (sandbox.Spec.Gate): nothing runs without it.
	intent, durable, err := r.o.Audit.IntentPending(r.o.Action, map[string]any{"argv": r.redactArgv(argv), "cwd": dir,
		"executable": ev.Executable, "rule": ev.Decision.Rule})
	if err != nil {
		return refusal(err)
	}
	// Made durable by the sandbox (the gate) or, where the command never
	// reached it, here; a second call does nothing.
	defer func() { _ = durable() }()
	stdout := r.o.Redact.NewOutputWriter(r.o.MaxOutputBytes, !r.o.RawOutput)
	stderr := r.o.Redact.NewOutputWriter(r.o.MaxOutputBytes, !r.o.RawOutput)
	spec := sandbox.Spec{Path: ev.Executable, Argv: argv, Dir: dir, Env: r.env(ev.Decision.Name), Stdout: stdout, Stderr: stderr,
		Gate: durable}
	stopReports := func() {}
	if running != nil {
		tail := &outputTail{}
		spec.Stdout, spec.Stderr = io.MultiWriter(stdout, tail), io.MultiWriter(stderr, tail)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			reportRunning(running, tail, r.o.Redact, r.o.RawOutput, stop)
		}()
		stopReports = func() { close(stop); <-done }
	}
	outc, err := r.execute(ctx, spec)
	stopReports()
	stdout.Close()
	stderr.Close()
	return r.finish(intent, argv, ev.Executable, outc, err, stdout, stderr)
}

// execute runs spec in the sandbox with a private HOME and TMPDIR, outside
// the jail, used by no concurrent run and emptied before reuse: nothing one
// run leaves there reaches the next.
func (r *Runner) execute(ctx context.Context, spec sandbox.Spec) (sandbox.Outcome, error) {
	var outc sandbox.Outcome
	rd, err := r.takeRunDirs()
	r.running.Add(1)
	if err == nil {
		s := r.spec(rd)
		s.Path, s.Argv, s.Dir, s.Env, s.Stdout, s.Stderr, s.Gate = spec.Path, spec.Argv, spec.Dir, spec.Env, spec.Stdout, spec.Stderr, spec.Gate
		sctx, span := telemetry.Start(ctx, "sandbox.run")
		outc, err = sandbox.Run(sctx, s)
		span.Set(telemetry.Int("process.exit.code", int64(outc.ExitCode)), telemetry.String("bastion.limit", outc.Limit))
		span.End()
	}
	r.giveBack(rd)
	return outc, err
}

// finish writes the outcome record of a run whose intent was recorded and
// builds its Outcome.
func (r *Runner) finish(intent string, argv []string, executable string, outc sandbox.Outcome, err error, stdout, stderr *redact.CappedWriter) Outcome {
	truncated := stdout.Truncated() || stderr.Truncated()
	out := Outcome{Ran: outc.Duration > 0, // zero only when the child never started
		Code: result.OK, Err: err, Argv: argv, ExitCode: outc.ExitCode, Signal: outc.Signal, Limit: outc.Limit,
		Confinement: outc.Confinement, Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Truncated: truncated,
		Protected: outc.Protected, ReadOnly: outc.ReadOnly,
		Neutralised: stdout.Neutralised() + stderr.Neutralised()}
	out.Refused = r.refusalsOf(executable, outc, err, out.Stderr)
	switch {
	case err != nil:
		out.Code, out.Reason = result.Classify(err)
	case truncated:
		out.Code = result.OutputTruncated
	}
	fields := map[string]any{
		"exit_code": outc.ExitCode, "duration_ms": outc.Duration.Milliseconds(),
		"stdout_bytes": stdout.TotalIn(), "stderr_bytes": stderr.TotalIn(), "truncated": truncated,
		"confinement": outc.Confinement, "redactions": stdout.Redactions() + stderr.Redactions(),
		"neutralised": out.Neutralised,
	}
	if outc.Signal != "" {
		fields["signal"] = outc.Signal
	}
	if outc.Limit != "" {
		fields["limit"] = outc.Limit
	}
	if len(outc.Protected) > 0 {
		fields["protected"] = outc.Protected
	}
	if len(out.Refused) > 0 {
		fields["sandbox_refused"] = out.Refused
	}
	// The record is written (one write(2): every reader of the log sees
	// it) before the answer; its fsync follows in the background
	// (audit.Log.OutcomeLazy), as organizerd's does: nothing reads the
	// audit log to recover a run, and a power loss in that millisecond
	// leaves the intent without its outcome, as a crash during the run
	// would. The intent stays fsync'd before anything runs.
	if aerr := r.o.Audit.OutcomeLazy(intent, r.o.Action, out.Code, fields); aerr != nil {
		r.o.Logger.Error("audit outcome record failed", "intent", intent)
	}
	switch {
	case !out.Ran:
	case out.Code == result.OK && outc.Signal != "":
		out.Reason = "the command ran and was ended by " + outc.Signal
	case out.Code == result.OK:
		out.Reason = fmt.Sprintf("the command ran and exited with status %d", outc.ExitCode)
	case out.Code == result.OutputTruncated:
		out.Reason = fmt.Sprintf("the command ran and exited with status %d; output was longer than %d bytes per stream "+
			"(stdout %d, stderr %d bytes) and was cut after redaction: narrow the command (head, grep, -n) to see the rest",
			outc.ExitCode, r.o.MaxOutputBytes, stdout.TotalIn(), stderr.TotalIn())
	}
	out.Reason += protectedNote(out, r.o.Protect) + refusalNote(out.Refused, r.o.Net)
	return out
}

// protectedNote is what the answer's reason adds about protected paths:
// what was undone, or, for a command that failed, which protected paths
// were read-only to it and the key that allows writing them.
func protectedNote(out Outcome, set *protect.Set) string {
	if len(out.Protected) > 0 {
		var paths []string
		for _, c := range out.Protected {
			paths = append(paths, c.Path+" ("+c.Attempted+")")
		}
		e, _ := set.Match(out.Protected[0].Path)
		return fmt.Sprintf("; the command wrote to protected paths, which were undone before this answer: %s "+
			"(detail.protected; what it planted is in the quarantine, restorable by the person with `terminald quarantine`). %s",
			strings.Join(paths, ", "), e.Reason())
	}
	if out.Ran && out.ExitCode != 0 && len(out.ReadOnly) > 0 {
		return fmt.Sprintf("; these protected paths were read-only to the command, so a write to them fails: %s "+
			"(they make git, editors or agent clients run code later; [terminal.sandbox] unprotect allows it, with a reason)",
			strings.Join(out.ReadOnly, ", "))
	}
	return ""
}

// refused records a refusal as an audit event (it changes nothing, so a
// failure to record it does not change the answer) and returns it.
func (r *Runner) refused(line string, err error) Outcome {
	out := refusal(err)
	_ = r.o.Audit.Event(r.o.Action+".refused", map[string]any{"command": r.redactLine(line), "code": out.Code})
	return out
}

// cwd resolves the requested working directory anchored in the jail and
// returns its absolute path and the open directory (kept open during the
// run). Escapes, symbolic links and mounts are PATH_ESCAPE.
func (r *Runner) cwd(p string) (string, *jail.Dir, error) {
	rel := "."
	if p != "" {
		var err error
		if rel, err = r.o.Root.Clean(p); err != nil {
			return "", nil, err
		}
	}
	d, err := r.o.Root.OpenDir(rel)
	if err != nil {
		if result.CodeOf(err) == result.NotFound {
			return "", nil, result.Wrap(result.NotFound, "the working directory does not exist in the jail (or is not a directory)", err)
		}
		return "", nil, err
	}
	if rel == "." {
		return r.o.Root.Path(), d, nil
	}
	return filepath.Join(r.o.Root.Path(), filepath.FromSlash(rel)), d, nil
}

// redactArgv returns argv with secrets in any word replaced by markers, for
// the audit log.
func (r *Runner) redactArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		b, _ := r.o.Redact.Redact([]byte(a))
		out[i] = string(b)
	}
	return out
}

// redactLine returns line with secrets replaced by markers, cut at 1 KiB,
// for the audit log.
func (r *Runner) redactLine(line string) string {
	b, _ := r.o.Redact.Redact([]byte(line))
	if len(b) > 1024 {
		b = append(b[:1024], "..."...)
	}
	return string(b)
}
