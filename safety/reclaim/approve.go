package reclaim

import (
	"context"
	"fmt"
	"strconv"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Key is the policy key that makes a confirmed reclaim ask the person.
const Key = "approval.reclaim"

// Title is the one fixed sentence of the question a confirmed reclaim asks.
const Title = "Permanently delete these directories? They cannot be restored from here; their package manager or build can regenerate them."

// errNoCall refuses a confirmed reclaim the person must confirm when the
// request carries no tool call to ask through (a server bug).
var errNoCall = result.New(result.InternalError, "the server cannot ask the person from this call; nothing was deleted")

// asks reports whether a confirmed reclaim asks the person.
func (r *Reclaimer) asks() bool { return r.o.Asker != nil && r.o.Confirmer == approval.Human }

// ask is a confirmed reclaim the person confirms. A dry run, which uses no
// id up, gives the live facts the question is built from; ids already
// refused are reported and not asked about. Only after the person accepts
// are the asked-about finds checked again and, unchanged, deleted; a
// decline, a dismissal, a timeout or a client that cannot ask deletes
// nothing and leaves every id valid.
func (r *Reclaimer) ask(ctx context.Context, q Request) (Result, error) {
	preview := r.run(ctx, q.IDs, true)
	question, asked := askAbout(preview)
	if len(asked) == 0 && !q.Call.Retry {
		res := notDone(preview, nil, nil)
		res.Approval = &approval.Approval{Asked: false, Key: Key}
		return res, nil
	}
	if q.Call.Ask == nil { // a caller that did not bind the tool call: never the agent's to confirm
		return notDone(preview, asked, errNoCall), errNoCall
	}
	v := q.Call.Ask(ctx, question)
	if v.Approval == nil {
		v.Approval = noAnswer(q.Call.Retry, v.Err)
	}
	switch {
	case v.Pending:
		return Result{Pending: true}, nil
	case v.ByAgent:
		res := r.run(ctx, q.IDs, false)
		res.Approval = v.Approval
		return res, nil
	case !v.Proceed:
		res := notDone(preview, asked, v.Err)
		res.Approval = v.Approval
		return res, v.Err
	}
	res := r.afterAccept(ctx, preview, asked)
	res.Approval = v.Approval
	v.Done(res.FirstRefusal())
	return res, nil
}

// noAnswer is detail.approval of a refusal without the person's answer:
// the question went unanswered (TIMEOUT, or a retry that did not match
// it), or it was never asked (the client cannot ask).
func noAnswer(retry bool, err error) *approval.Approval {
	if retry || result.CodeOf(err) == result.Timeout {
		return &approval.Approval{Asked: true, By: string(approval.Human), Key: Key}
	}
	return &approval.Approval{Asked: false, Key: Key}
}

// askAbout builds the question from a dry run's outcomes: every find that
// would be deleted, with its path, kind and size, and the total. It
// returns the indexes of the outcomes asked about.
func askAbout(preview Result) (approval.Question, []int) {
	var asked []int
	var items, binding []string
	var total int64
	risky, tracked := 0, 0
	for i, o := range preview.Outcomes {
		if o.Code != result.OK {
			continue
		}
		asked = append(asked, i)
		items = append(items, fmt.Sprintf("%s (%s, %s)%s", o.Path, o.kind, Size(o.SizeBytes), o.Inside.describe()))
		binding = append(binding, bindingOf(o))
		total += o.SizeBytes
		if o.Inside != nil {
			risky += o.Inside.HighRiskCount
			tracked += o.Inside.TrackedCount
		}
	}
	facts := [][2]string{{"Directories", strconv.Itoa(len(asked))}, {"Total size", Size(total)}}
	if risky > 0 {
		facts = append(facts, [2]string{"HIGH_RISK files inside (risk radar)", strconv.Itoa(risky)})
	}
	if tracked > 0 {
		facts = append(facts, [2]string{"Files tracked by git that go with them ([sweep] allow_tracked)", strconv.Itoa(tracked)})
	}
	if n := len(preview.Outcomes) - len(asked); n > 0 {
		facts = append(facts, [2]string{"Ids not included (already used, expired, unknown or changed)", strconv.Itoa(n)})
	}
	return approval.Question{Action: "reclaim", Key: Key, Title: Title, Facts: facts, Items: items, Binding: binding}, asked
}

// bindingOf is what the person's answer covers for one find: the id, the
// path, the size and kind the scan measured, and the directory's identity
// and modification time as the re-check saw them.
func bindingOf(o Outcome) string {
	return fmt.Sprintf("id=%s path=%q size=%d kind=%s dev=%d ino=%d mtime=%d",
		o.ID, o.Path, o.SizeBytes, o.kind, o.live.ID.Dev, o.live.ID.Ino, o.live.ModTime.UnixNano())
}

// notDone is the result of a confirmed reclaim that deleted nothing: the
// ids refused by the re-check keep their outcome, the asked-about ones get
// the refusal err.
func notDone(preview Result, asked []int, err error) Result {
	res := Result{Outcomes: append([]Outcome(nil), preview.Outcomes...)}
	for _, i := range asked {
		res.Outcomes[i].Code, res.Outcomes[i].Reason = result.CodeOf(err), "not deleted: see the reason of the whole call"
	}
	res.count()
	return res
}

// afterAccept re-checks every find the person accepted against the live
// filesystem, without using its id, and deletes those whose binding is
// still the one asked about (the deletion itself re-checks again, through
// the descriptor it removes by). A find that changed meanwhile is STALE.
func (r *Reclaimer) afterAccept(ctx context.Context, preview Result, asked []int) Result {
	ids := make([]string, len(asked))
	for k, i := range asked {
		ids[k] = preview.Outcomes[i].ID
	}
	again := r.run(ctx, ids, true)
	res := Result{Outcomes: append([]Outcome(nil), preview.Outcomes...)}
	var del []string
	var at []int
	for k, i := range asked {
		now := again.Outcomes[k]
		switch {
		case now.Code != result.OK:
			res.Outcomes[i].Code, res.Outcomes[i].Reason = now.Code, now.Reason
		case bindingOf(now) != bindingOf(preview.Outcomes[i]):
			res.Outcomes[i].Code, res.Outcomes[i].Reason = result.Stale, "the directory changed while the person was being asked; nothing was deleted: scan again"
		default:
			del, at = append(del, ids[k]), append(at, i)
		}
	}
	if len(del) > 0 {
		done := r.run(ctx, del, false)
		for k, i := range at {
			res.Outcomes[i] = done.Outcomes[k]
		}
	}
	res.count()
	return res
}

// Size writes a byte count the way a person reads it ("12.3 MiB").
func Size(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
