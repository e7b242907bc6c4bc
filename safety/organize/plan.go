package organize

import (
	"context"
	"sort"
	"time"

	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/result"
)

// plan is what a plan id stands for: the moves as planned, each with the
// state Apply re-checks.
type plan struct {
	moves   []journal.Move
	created time.Time
}

// Plan is a plan as plan_organize shows it. Nothing changed to make it.
type Plan struct {
	// ID is the single-use plan id Apply takes; "" when nothing is to move.
	ID      string
	Created time.Time
	// Moves are every planned move, in name order.
	Moves []Planned
	// Skips are every entry left alone, in name order, with the rule that
	// skipped it.
	Skips []Skipped
}

// Planned is one planned move: Src into its category folder at Dest.
type Planned struct {
	Src, Dest, Category string
	Size                int64
}

// Skipped is one entry the planner leaves alone, and why.
type Skipped struct {
	Name string // as found (it may hold control characters)
	Skip Skip
}

// Plan evaluates every entry at the top of the workspace with the full
// rule set (Workspace.Evaluate) and, when anything may move, stores the
// moves under a fresh single-use plan id. Category folders are
// destinations, not entries to organize. The error is the workspace's own
// (it could not be read).
func (g *Organizer) Plan(ctx context.Context) (Plan, error) {
	_, end := g.begin(ctx, "plan_organize", StepCheck)
	d, err := g.o.Root.OpenDir(".")
	if err != nil {
		end(result.CodeOf(err))
		return Plan{}, err
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		end(result.CodeOf(err))
		return Plan{}, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	p := &plan{created: time.Now().UTC()}
	out := Plan{Created: p.created, Moves: []Planned{}, Skips: []Skipped{}}
	for _, e := range ents {
		if e.Type.IsDir() && g.o.Rules.IsCategoryFolder(e.Name) {
			continue
		}
		ev := g.ws.Evaluate(d, ".", e)
		if ev.Skip != nil {
			out.Skips = append(out.Skips, Skipped{Name: e.Name, Skip: *ev.Skip})
			continue
		}
		p.moves = append(p.moves, journal.Move{Src: e.Name, Dst: ev.Dest, State: ev.State})
		out.Moves = append(out.Moves, Planned{Src: e.Name, Dest: ev.Dest, Category: ev.Facts.Category, Size: ev.Size})
	}
	end(result.OK)
	if len(p.moves) > 0 {
		out.ID = g.plans.Issue(p)
	}
	return out, nil
}
