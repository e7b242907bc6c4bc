// Package reclaim is sweepd's deletion pipeline in one call: a request of
// scan ids goes in, an outcome per id comes out. For each id, Run looks its
// ticket up (peeking for a dry run, using it up for a deletion), re-checks
// the find against the live filesystem (jail.Root.Verify), writes the audit
// intent record, removes the directory through the checked descriptor
// (jail.Root.RemoveTree: renamed aside in one step, then deleted, so a
// crash never leaves a find half-deleted at its path; Recover finishes the
// deletion on the next start) and writes the audit outcome record. The server
// decodes the arguments and translates the Result into words; every refusal
// is decided here or below.
package reclaim

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// MaxIDs is how many ids one request may name.
const MaxIDs = 1000

// Workers is how many ids are re-validated and deleted at once; each id is
// handled independently and results keep the request's order.
const Workers = 4

// Confirmation is the exact confirm value that turns a dry run into a
// deletion.
const Confirmation = "delete"

// Refusals of a whole request.
var (
	ErrNoIDs   = result.New(result.InvalidRequest, "ids is required: pass the ids a scan returned")
	ErrTooMany = result.New(result.InvalidRequest, "at most 1000 ids per call")
)

// Ticket is what one scan id stands for: a find, as the scan saw it.
type Ticket struct {
	Root    *jail.Root
	Rel     string // root-relative path of the find
	Project string // root-relative path of the directory holding the marker
	Kind    string
	ID      jail.Identity
	Size    int64
	Keep    bool
	// Inside is what the scan's radar saw inside the find (HIGH_RISK and
	// git-tracked files); nil when it saw nothing to tell.
	Inside *Inside
}

// Kind is what a find of one enabled kind must still show when it is
// reclaimed: a marker file beside it and the files inside it.
type Kind struct {
	Markers []string
	Inside  []string
}

// Options configure a Reclaimer.
type Options struct {
	// Kinds are the enabled kinds; a ticket of any other kind is refused.
	Kinds map[string]Kind
	// KeepFile protects a find, its project and everything beneath.
	KeepFile string
	// TTL is how long a ticket stays valid (default one hour).
	TTL time.Duration
	// Audit receives the intent and outcome record of every deletion.
	Audit *audit.Log
	// Logger receives a note when an outcome record cannot be written.
	Logger *slog.Logger
	// Asker asks the person before a confirmed deletion when Confirmer is
	// approval.Human. Without an Asker, or with approval.Agent, the agent's
	// confirm: "delete" alone deletes, as before approval.
	Asker     *approval.Asker
	Confirmer approval.Who
	// Radar, when set, counts again, at the moment of each reclaim, the
	// paths git's index lists beneath the find (risk.Engine.TrackedUnder),
	// besides what the scan saw.
	Radar *risk.Engine
	// AllowTracked ([sweep] allow_tracked) lets a find that holds files
	// git tracks be reclaimed; by default it is refused (Inside.GitKeep).
	AllowTracked bool
}

// Reclaimer issues tickets for finds and reclaims them by id.
type Reclaimer struct {
	o       Options
	tickets *ids.Store[Ticket]
}

// New returns a Reclaimer with an empty ticket store.
func New(o Options) *Reclaimer {
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reclaimer{o: o, tickets: ids.NewStore[Ticket]("f", o.TTL, 200000)}
}

// TTL is how long an issued id stays valid.
func (r *Reclaimer) TTL() time.Duration { return r.o.TTL }

// Issue stores t and returns the single-use id that stands for it.
func (r *Reclaimer) Issue(t Ticket) string { return r.tickets.Issue(t) }

// Request is one reclaim call as the client made it.
type Request struct {
	IDs     []string
	Confirm *string // nil when the client gave none
	// Call is the tool call itself: the Asker reads the client's session
	// and, from a 2026-07-28 client's retry, the person's answer.
	Call approval.Call
}

// DryRun reports whether the request deletes nothing: any confirm other
// than exactly Confirmation, or none, is a dry run.
func (q Request) DryRun() bool { return q.Confirm == nil || *q.Confirm != Confirmation }

// Outcome is one id's result.
type Outcome struct {
	ID        string      `json:"id"`
	Path      string      `json:"path"`
	Code      result.Code `json:"code"`
	Reason    string      `json:"reason"`
	SizeBytes int64       `json:"size_bytes"`
	// Inside names the HIGH_RISK and git-tracked files the find holds
	// (omitted when it holds none).
	Inside *Inside `json:"inside,omitempty"`

	kind string    // the ticket's kind, once its ticket was found
	live jail.Info // the find as a dry run's re-check saw it
}

// Result is a whole request's outcome.
type Result struct {
	DryRun    bool
	Outcomes  []Outcome // one per requested id, in the request's order
	OK        int       // how many ids were (or, in a dry run, would be) deleted
	Reclaimed int64     // bytes deleted; 0 in a dry run
	// WouldReclaim is, in a dry run, the total size of the finds that
	// would be deleted; 0 otherwise.
	WouldReclaim int64
	// Approval is who confirmed a deletion (detail.approval); nil in a dry
	// run.
	Approval *approval.Approval
	// Pending: the tool's answer is the question to the person, already set
	// on the call (a 2026-07-28 client); nothing was done yet.
	Pending bool
}

// FirstRefusal is the code of the first id that was not OK, or OK when
// every id was.
func (r Result) FirstRefusal() result.Code {
	for _, o := range r.Outcomes {
		if o.Code != result.OK {
			return o.Code
		}
	}
	return result.OK
}

// Run handles every id of q and returns the outcome of each. The only
// error is a refusal of the request as a whole (ErrNoIDs, ErrTooMany, or
// the person's answer when Options.Confirmer is approval.Human: see
// approve.go); refusals of single ids are in their Outcome.
func (r *Reclaimer) Run(ctx context.Context, q Request) (Result, error) {
	if len(q.IDs) == 0 {
		return Result{}, ErrNoIDs
	}
	if len(q.IDs) > MaxIDs {
		return Result{}, ErrTooMany
	}
	if q.DryRun() {
		return r.run(ctx, q.IDs, true), nil
	}
	if !r.asks() {
		res := r.run(ctx, q.IDs, false)
		res.Approval = &approval.Approval{Asked: false, By: string(approval.Agent), Key: Key}
		return res, nil
	}
	return r.ask(ctx, q)
}

// run handles ids, each independently, a dry run (peeking at tickets) or
// in earnest (using them up).
func (r *Reclaimer) run(ctx context.Context, ids []string, dry bool) Result {
	res := Result{DryRun: dry, Outcomes: make([]Outcome, len(ids))}
	seen := map[string]bool{}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(len(ids), Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res.Outcomes[i] = r.one(ctx, ids[i], dry)
			}
		}()
	}
	for i, id := range ids {
		if seen[id] {
			res.Outcomes[i] = Outcome{ID: Truncate(id, 64), Code: result.InvalidRequest, Reason: "this id appears twice in the request"}
			continue
		}
		seen[id] = true
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	res.count()
	return res
}

// count sums the OK outcomes up: how many, and the bytes deleted (or, in a
// dry run, the bytes that would be).
func (res *Result) count() {
	res.OK, res.Reclaimed, res.WouldReclaim = 0, 0, 0
	for _, o := range res.Outcomes {
		if o.Code != result.OK {
			continue
		}
		res.OK++
		if res.DryRun {
			res.WouldReclaim += o.SizeBytes
		} else {
			res.Reclaimed += o.SizeBytes
		}
	}
}

// one handles one id: ticket, re-check, and in earnest intent, removal and
// outcome record.
func (r *Reclaimer) one(ctx context.Context, id string, dry bool) Outcome {
	take := r.tickets.Take
	if dry {
		take = r.tickets.Peek
	}
	t, err := take(id)
	if err != nil {
		code, reason := result.Classify(err)
		return Outcome{ID: Truncate(id, 64), Code: code, Reason: reason}
	}
	out := Outcome{ID: id, Path: filepath.Join(t.Root.Path(), filepath.FromSlash(t.Rel)), SizeBytes: t.Size, kind: t.Kind}
	kind, ok := r.o.Kinds[t.Kind]
	if !ok {
		out.Code, out.Reason = result.PolicyDenied, "this kind of target is disabled"
		return out
	}
	g := jail.Guard{Want: t.ID, Markers: kind.Markers, MarkerDir: t.Project, Inside: kind.Inside, KeepFile: r.o.KeepFile}
	if ctx.Err() != nil {
		out.Code, out.Reason = result.OperationFailed, "cancelled before this id was handled"
		return out
	}
	if err := r.gitCheck(t, &out); err != nil {
		out.Code, out.Reason = result.Classify(err)
		return out
	}
	if dry {
		return verify(t, g, out)
	}
	_, span := telemetry.Start(ctx, "reclaim.delete", telemetry.String("bastion.kind", t.Kind))
	out = r.remove(t, g, out)
	span.Set(telemetry.Int("bastion.bytes", out.SizeBytes))
	span.Code(string(out.Code))
	span.End()
	return out
}

// gitCheck refuses a find that holds files git tracks (by the scan's walk
// or by the index now) unless Options.AllowTracked, and gives out what the
// find holds.
func (r *Reclaimer) gitCheck(t Ticket, out *Outcome) error {
	var live risk.GitHold
	if r.o.Radar != nil {
		live, _ = r.o.Radar.TrackedUnder(t.Root, t.Rel)
	}
	in := Inside{}
	if t.Inside != nil {
		in = *t.Inside
	}
	if live.Tracked > in.TrackedCount {
		in.TrackedCount = live.Tracked
		if live.Repo != "" && !contains(in.Repos, live.Repo) {
			in.Repos = append(append([]string(nil), in.Repos...), live.Repo)
		}
	}
	if !in.empty() {
		out.Inside = &in
	}
	if keep, why := in.GitKeep(live, r.o.AllowTracked); keep {
		return errTracked(why)
	}
	return nil
}

// verify is a dry run's re-check of one find.
func verify(t Ticket, g jail.Guard, out Outcome) Outcome {
	p, d, err := t.Root.Verify(t.Rel, g)
	if err != nil {
		out.Code, out.Reason = result.Classify(err)
		return out
	}
	out.live = d.Info()
	p.Close()
	d.Close()
	out.Code, out.Reason = result.OK, "would be deleted (dry run)"
	return out
}

// remove deletes one find, with the audit intent written (fail-closed)
// after the re-check and before the first unlink, and the outcome after.
// The find is first renamed aside under a fresh name the intent record
// carries (jail.Guard.Aside), so a crash leaves it whole or gone from its
// path; Recover finishes what a crash left set aside.
func (r *Reclaimer) remove(t Ticket, g jail.Guard, out Outcome) Outcome {
	var intent string
	g.Aside = jail.AsidePrefix + ids.New("r")
	fields := map[string]any{"id": out.ID, "path": out.Path, "kind": t.Kind, "size_bytes": t.Size, "aside": g.Aside}
	g.Intent = func() error {
		var err error
		intent, err = r.o.Audit.Intent("reclaim", fields)
		return err
	}
	u, err := t.Root.RemoveTree(t.Rel, g)
	code, reason := result.Classify(err)
	if err == nil {
		reason = "deleted"
		out.SizeBytes = u.Bytes
	}
	if intent != "" {
		rec := map[string]any{"id": out.ID, "path": out.Path, "removed_bytes": u.Bytes, "removed_files": u.Files, "reason": reason}
		if aerr := r.o.Audit.Outcome(intent, "reclaim", code, rec); aerr != nil {
			r.o.Logger.Error("audit outcome record failed", "id", out.ID)
		}
	}
	out.Code, out.Reason = code, reason
	return out
}

// Truncate shortens s to n bytes plus an ellipsis, so a client's long
// value is echoed back bounded.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
