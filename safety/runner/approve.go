package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// AskFunc asks the person about one command through the tool call that
// brought it (approval.Asker.For binds it). The runner builds the question
// from its own facts.
type AskFunc = approval.AskFunc

// questionTitle is the one fixed sentence of every question about a run.
const questionTitle = "Run this command in the jail?"

// judged is a line judged and its working directory opened: what a run
// (or a question about one) depends on.
type judged struct {
	ev  Evaluation
	dir string
	dh  *jail.Dir
	id  jail.Identity // the working directory's, when it was opened
}

// approve decides an ask decision (ev.Decision.Ask). It is the one place a
// person's approval is obtained: it asks through req.Ask with a question
// built only from the runner's facts (the parsed argv, the executable, the
// working directory, the rule that asks, the confinement). It returns the
// verdict to act on (Proceed or ByAgent) and true, or the Outcome to
// answer with (a refusal, or Pending for a 2026-07-28 client) and false.
// Without req.Ask no person can be asked, so it refuses with
// NEEDS_EXPLICIT_REQUEST, saying who must approve and why.
func (r *Runner) approve(ctx context.Context, req Request, j judged) (approval.Verdict, Outcome, bool) {
	if req.Ask == nil {
		return approval.Verdict{}, r.refused(req.Line, result.Wrap(result.NeedsExplicitRequest, result.Reason(j.ev.askErr)+
			". This server has no way to ask a person (no approval is configured), so it was not run: "+
			"ask the user to run it themselves", j.ev.askErr)), false
	}
	v := req.Ask(ctx, r.question(j))
	switch {
	case v.Pending:
		return v, Outcome{Pending: true, Code: result.NeedsExplicitRequest, Reason: "waiting for the person's answer"}, false
	case v.Proceed, v.ByAgent:
		return v, Outcome{}, true
	}
	out := r.refused(req.Line, v.Err)
	out.Approval = v.Approval
	return v, out, false
}

// question is what the person is asked about j. Only server-side facts go
// in: the argv as parsed (shown with each word quoted and, by the approval
// package, escaped; secrets redacted from the text shown and recorded, not
// from the binding), the executable, the working directory, the policy's
// reason, the confinement; the rule that asks is its Key. The binding is
// the exact argv, the working directory (path and identity) and the
// executable: a session approval covers exactly that.
func (r *Runner) question(j judged) approval.Question {
	d := j.ev.Decision
	binding := []string{"argc=" + strconv.Itoa(len(d.Argv))}
	binding = append(binding, d.Argv...)
	binding = append(binding, "cwd="+j.dir, fmt.Sprintf("cwd.id=%d:%d", j.id.Dev, j.id.Ino), "executable="+j.ev.Executable)
	return approval.Question{
		Action: r.o.Action,
		Key:    d.Rule,
		Title:  questionTitle,
		Facts: [][2]string{
			{"Command", shellWords(r.redactArgv(d.Argv))},
			{"Program", j.ev.Executable},
			{"Working directory", j.dir},
			{"Policy", d.Reason},
			{"Confinement", r.confinement},
		},
		Session: true,
		Binding: binding,
	}
}

// recheck judges the line again after the person's answer: the
// executable must resolve to the same path and the working directory must
// still be the same directory in the jail. Anything else is STALE and runs
// nothing; the verdict's outcome is recorded.
func (r *Runner) recheck(req Request, before judged, v approval.Verdict) (judged, Outcome, bool) {
	stale := func(err error) (judged, Outcome, bool) {
		v.Done(result.Stale)
		out := r.refused(req.Line, err)
		out.Approval = v.Approval
		return judged{}, out, false
	}
	now, err := r.judge(req)
	switch {
	case err != nil:
		return stale(errChanged("the command or its working directory changed ("+result.Reason(err)+")", err))
	case now.ev.askErr == nil:
		now.dh.Close()
		return stale(errChanged("the command's decision changed", nil))
	case now.ev.Executable != before.ev.Executable:
		now.dh.Close()
		return stale(errChanged("the program now resolves to "+now.ev.Executable+", not "+before.ev.Executable, nil))
	case now.dir != before.dir || now.id != before.id:
		now.dh.Close()
		return stale(errChanged("the working directory was replaced", nil))
	}
	return now, Outcome{}, true
}

// errChanged is the STALE refusal of a command whose facts changed while
// the person was being asked.
func errChanged(why string, cause error) error {
	return result.Wrap(result.Stale, why+" while the person was being asked: nothing was run; "+
		"call again to ask about the command as it is now", cause)
}

// shellWords shows argv as a POSIX shell would need it typed: words made
// only of safe characters as they are, others in single quotes. What the
// words contain beyond that (newlines, control and bidi characters) is
// escaped by approval.Escape when the question is rendered.
func shellWords(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
			words[i] = w
			continue
		}
		words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}
