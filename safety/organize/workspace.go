package organize

import (
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Workspace applies the rules to the objects of one workspace: it gathers
// each object's facts from the live filesystem and decides whether a tool
// may move it. The server only translates its answers.
type Workspace struct {
	Root  *jail.Root
	Rules *Rules
	Radar *Radar // nil: no high-risk restraint
}

// Evaluation is what the planner decided about one entry.
type Evaluation struct {
	Facts Facts
	Skip  *Skip          // nil: the planner may move it to Dest
	Size  int64          // lstat size
	State jail.FileState // the state a move re-checks
	Dest  string         // root-relative destination; "" unless a file with a category
}

// notTopLevel is the planner's restraint for entries below the top of the
// workspace, which it never organizes.
func notTopLevel() *Skip {
	return &Skip{Code: result.NeedsExplicitRequest, Rule: "not-top-level", Layer: Restraint,
		Reason: "plan_organize only organizes the top of the workspace; move it with move_file if the user asks"}
}

// Evaluate applies the full rule set (the planner's view) to the entry e
// of d, the directory at rel.
func (w Workspace) Evaluate(d *jail.Dir, rel string, e jail.Entry) Evaluation {
	var ev Evaluation
	if jail.CheckName(e.Name) != nil {
		ev.Facts = Facts{Name: e.Name, Kind: KindOfEntry(e.Type), BadName: true}
		ev.Skip = w.Rules.Plan(ev.Facts)
		return ev
	}
	info, err := d.Lstat(e.Name)
	if err != nil {
		ev.Facts = Facts{Name: e.Name, Kind: KindOfEntry(e.Type)}
		code, reason := result.Classify(err)
		ev.Skip = &Skip{Code: code, Reason: reason, Rule: "unreadable", Layer: Protection}
		return ev
	}
	ev.Facts = w.Rules.FactsFor(jail.Join(rel, e.Name), info, w.Radar)
	ev.Size, ev.State = info.Size, jail.StateOf(info)
	if ev.Facts.Kind == File && ev.Facts.Category != "" {
		ev.Dest = jail.Join(jail.Join(rel, ev.Facts.Category), e.Name)
		ev.Facts.DestOccupied = w.Occupied(ev.Dest)
	}
	ev.Facts.Protected = isProtected(ev.Dest)
	ev.Skip = w.Rules.Plan(ev.Facts)
	return ev
}

// Listed is Evaluate as list_files shows it: an entry below the top of the
// workspace that the rules would let through is still one the planner
// leaves alone (not-top-level).
func (w Workspace) Listed(d *jail.Dir, rel string, e jail.Entry) Evaluation {
	ev := w.Evaluate(d, rel, e)
	if rel != "." && ev.Skip == nil {
		ev.Skip = notTopLevel()
	}
	return ev
}

// Occupied reports whether dest exists or its folder is not a real folder.
func (w Workspace) Occupied(dest string) bool {
	if _, err := w.Root.Lstat(dest); err == nil || result.CodeOf(err) != result.NotFound {
		return true
	}
	parent, _ := jail.Split(dest)
	if i, err := w.Root.Lstat(parent); err == nil && !i.IsDir() {
		return true
	}
	return false
}

// CheckMove resolves a move a person asked for (src and dest relative to the
// workspace, or absolute inside it) and applies the protection layer. It
// returns the move to perform, or the skip that refuses it.
func (w Workspace) CheckMove(src, dest string) (journal.Move, *Skip) {
	sr, err := w.Root.Clean(src)
	if err != nil {
		return journal.Move{}, w.badPath(src, err)
	}
	dr, err := w.Root.Clean(dest)
	if err != nil {
		return journal.Move{}, w.badPath(src, err)
	}
	if sr == "." || dr == "." {
		return journal.Move{}, &Skip{Code: result.InvalidRequest, Reason: "the workspace itself cannot be moved, nor replaced", Rule: "invalid-path", Layer: Protection}
	}
	info, err := w.Root.Lstat(sr)
	if err != nil {
		if result.CodeOf(err) == result.PathEscape {
			return journal.Move{}, w.badPath(src, err)
		}
		code, reason := result.Classify(err)
		return journal.Move{}, &Skip{Code: code, Reason: reason, Rule: "source", Layer: Protection}
	}
	f := w.Rules.FactsFor(sr, info, nil)
	if _, dname := jail.Split(dr); jail.CheckName(dname) != nil {
		f.BadName = true
	}
	f.DestOccupied = w.Occupied(dr)
	f.Protected = isProtected(dr)
	if sk := w.Rules.Protect(f); sk != nil {
		return journal.Move{}, sk
	}
	return journal.Move{Src: sr, Dst: dr, State: jail.StateOf(info)}, nil
}

// badPath is the skip for a path that does not resolve inside the
// workspace: the protection rule that matches (path-escape, bad-name), or
// the resolver's own refusal.
func (w Workspace) badPath(src string, err error) *Skip {
	code, reason := result.Classify(err)
	f := Facts{Name: src, Escape: code == result.PathEscape, BadName: code != result.PathEscape}
	if sk := w.Rules.Protect(f); sk != nil {
		return sk
	}
	return &Skip{Code: code, Reason: reason, Rule: "invalid-path", Layer: Protection}
}

// protectedSet is the built-in protected set (safety/protect): organizerd
// never creates, moves or replaces a path that makes the person's tools
// run code later.
var protectedSet = protect.Default()

// isProtected reports whether any of paths (workspace-relative; "" is
// skipped) is a protected path.
func isProtected(paths ...string) bool {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, ok := protectedSet.Match(p); ok {
			return true
		}
	}
	return false
}
