package organize

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/result"
)

// steps is an Observer that writes down each step as it begins and ends.
type steps struct {
	mu  sync.Mutex
	log []string
}

func (s *steps) Begin(ctx context.Context, tool string, step Step) (context.Context, func(result.Code)) {
	s.add(tool + " " + string(step))
	return ctx, func(code result.Code) { s.add(tool + " " + string(step) + " end " + string(code)) }
}

func (s *steps) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, line)
}

// take returns the steps so far and forgets them.
func (s *steps) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.log
	s.log = nil
	return out
}

// newOrganizer is an Organizer over a workspace holding files, with a real
// journal and audit log, set adjusting its Options.
func newOrganizer(t *testing.T, set func(*Options), files ...string) (*Organizer, string, string) {
	t.Helper()
	w, dir := newWorkspace(t, files...)
	state := t.TempDir()
	alog, err := audit.Open(audit.Options{Path: filepath.Join(state, "audit.jsonl"), Server: "organizerd", Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	j, _, err := journal.Open(filepath.Join(state, "organizerd.journal"), w.Root, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	o := Options{Root: w.Root, Rules: w.Rules, Journal: j, Audit: alog}
	if set != nil {
		set(&o)
	}
	return NewOrganizer(o), dir, filepath.Join(state, "audit.jsonl")
}

// personSays is an approval.Call whose person gives v, after doing meanwhile.
func personSays(v approval.Verdict, meanwhile func()) approval.Call {
	return approval.Call{Ask: func(context.Context, approval.Question) approval.Verdict {
		if meanwhile != nil {
			meanwhile()
		}
		return v
	}}
}

// TestEveryFlowTakesItsStepsInTheSafeOrder drives each flow, confirmed by
// the agent and then by the person, and checks the order of its steps as
// an Observer sees them: checks, the question, the re-check after the
// answer, the audit intent inside the journal's step (after its checks,
// before it moves), the outcome record last.
func TestEveryFlowTakesItsStepsInTheSafeOrder(t *testing.T) {
	obs := &steps{}
	asker := approval.New(approval.Options{})
	g, _, _ := newOrganizer(t, func(o *Options) {
		o.Observer, o.Asker = obs, asker
	}, "a.pdf", "b.jpg")
	accept := personSays(approval.Verdict{Proceed: true}, nil)
	flows := []struct {
		name string
		run  func() Outcome
		want []string
	}{
		{"apply by the agent", func() Outcome {
			p, err := g.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			obs.take()
			return g.Apply(context.Background(), ApplyRequest{PlanID: p.ID})
		}, []string{"plan_id", "plan_id end OK", "journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
		{"undo by the agent", func() Outcome { return g.Undo(context.Background(), approval.Call{}) },
			[]string{"journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
		{"move by the agent", func() Outcome {
			return g.Move(context.Background(), MoveRequest{Src: "a.pdf", Dest: "Docs/a.pdf"})
		}, []string{"check", "check end OK", "journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
		{"apply asked", func() Outcome {
			p, err := g.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			obs.take()
			return g.Apply(context.Background(), ApplyRequest{PlanID: p.ID, Call: accept})
		}, []string{"plan_id", "plan_id end OK", "check", "check end OK", "ask", "ask end OK",
			"plan_id", "plan_id end OK", "journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
		{"move asked", func() Outcome {
			return g.Move(context.Background(), MoveRequest{Src: "Docs/a.pdf", Dest: "a.pdf", Call: accept})
		}, []string{"check", "check end OK", "ask", "ask end OK", "recheck", "recheck end OK",
			"journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
		{"undo asked", func() Outcome { return g.Undo(context.Background(), accept) },
			[]string{"check", "check end OK", "ask", "ask end OK", "journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
		{"redo asked", func() Outcome { return g.Redo(context.Background(), accept) },
			[]string{"check", "check end OK", "ask", "ask end OK", "journal", "intent", "intent end OK", "journal end OK", "record", "record end OK"}},
	}
	for _, f := range flows {
		who := approval.Agent
		if strings.HasSuffix(f.name, " asked") {
			who = approval.Human
		}
		g.o.ApplyPlan, g.o.MoveFile = who, who
		out := f.run()
		if out.Code != result.OK || out.Moved() == 0 {
			t.Fatalf("%s: %s %s, moved %d", f.name, out.Code, out.Reason, out.Moved())
		}
		var got []string
		for _, s := range obs.take() {
			got = append(got, strings.TrimPrefix(s, out.Tool+" "))
		}
		if !slices.Equal(got, f.want) {
			t.Fatalf("%s: steps\n%q\nwant\n%q", f.name, got, f.want)
		}
	}
}

// TestACallThatCannotAskNeverLetsTheAgentConfirm: when the policy says the
// person confirms, a caller that passes no approval.Call (a view or a tool
// that forgot approval.Asker.For) is refused and nothing moves; the agent's
// call is not taken as the person's confirmation.
func TestACallThatCannotAskNeverLetsTheAgentConfirm(t *testing.T) {
	g, dir, logPath := newOrganizer(t, func(o *Options) {
		o.Asker, o.ApplyPlan, o.MoveFile = approval.New(approval.Options{}), approval.Human, approval.Human
	}, "a.pdf", "b.jpg")
	p, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	outs := []Outcome{
		g.Apply(context.Background(), ApplyRequest{PlanID: p.ID}),
		g.Move(context.Background(), MoveRequest{Src: "a.pdf", Dest: "Docs/a.pdf"}),
		g.Undo(context.Background(), approval.Call{}),
	}
	for _, out := range outs[:2] {
		if out.Code != result.InternalError || out.Moved() != 0 || out.Step != StepAsk {
			t.Fatalf("%s: %s at %s, moved %d; want INTERNAL_ERROR at ask, nothing moved", out.Tool, out.Code, out.Step, out.Moved())
		}
	}
	if outs[2].Code != result.NotFound { // nothing to undo: refused before asking
		t.Fatalf("undo: %s %s", outs[2].Code, outs[2].Reason)
	}
	for _, f := range []string{"a.pdf", "b.jpg"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s moved: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), `"intent"`) {
		t.Fatalf("an intent was written:\n%s", b)
	}
	// The plan id was not used up: asked properly, the plan applies.
	out := g.Apply(context.Background(), ApplyRequest{PlanID: p.ID, Call: personSays(approval.Verdict{Proceed: true}, nil)})
	if out.Code != result.OK || out.Moved() != 2 {
		t.Fatalf("apply after: %s %s", out.Code, out.Reason)
	}
}

// TestFileSwappedWhileThePersonIsAskedIsNotMoved: the person accepts a
// move, but while they read the question the file was replaced by another
// of the same name; the pipeline's re-check after the answer refuses it
// and nothing moves, for any caller of Move (a tool, or a view).
func TestFileSwappedWhileThePersonIsAskedIsNotMoved(t *testing.T) {
	g, dir, _ := newOrganizer(t, func(o *Options) {
		o.Asker, o.MoveFile = approval.New(approval.Options{}), approval.Human
	}, "a.pdf")
	a := filepath.Join(dir, "a.pdf")
	swap := func() {
		if err := os.Rename(a, a+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(a, []byte("another file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := g.Move(context.Background(), MoveRequest{Src: "a.pdf", Dest: "Docs/a.pdf", Call: personSays(approval.Verdict{Proceed: true}, swap)})
	if out.Step != StepRecheck || out.Code == result.OK || out.Moved() != 0 {
		t.Fatalf("%s at %s (%s), moved %d; want a refusal at the recheck", out.Code, out.Step, out.Reason, out.Moved())
	}
	if _, err := os.Lstat(filepath.Join(dir, "Docs")); err == nil {
		t.Fatal("Docs was created")
	}
}
