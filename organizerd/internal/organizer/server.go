// Package organizer is organizerd's MCP wiring: it builds the six tools and
// turns their calls into safety/organize rule evaluations and
// safety/journal actions. It decides nothing about what may be moved; the
// rules and checks live in safety.
package organizer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
)

// MaxListed bounds how many moves and skips one response lists; a plan
// itself is never truncated.
const MaxListed = 500

// Options configure a Server.
type Options struct {
	Root    *jail.Root
	Rules   *organize.Rules
	Journal *journal.Journal
	Radar   *organize.Radar
	Audit   *audit.Log
	Logger  *slog.Logger
	Version string
	PlanTTL time.Duration
}

// Server holds organizerd's state.
type Server struct {
	o     Options
	plans *ids.Store[*plan]
	log   *slog.Logger
}

type plan struct {
	moves   []journal.Move
	created time.Time
}

// New builds a Server.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PlanTTL <= 0 {
		o.PlanTTL = time.Hour
	}
	return &Server{o: o, plans: ids.NewStore[*plan]("p", o.PlanTTL, 64), log: o.Logger}
}

// Instructions is sent to clients at initialize.
const Instructions = "organizerd tidies one workspace folder by moving files into category folders (Images, Documents, ...). " +
	"It never deletes and never overwrites. Call plan_organize, show the user the moves and skips, then apply_plan(plan_id). " +
	"Skips with NEEDS_EXPLICIT_REQUEST are safe but left alone on purpose: move them with move_file only when the user names them. " +
	"undo_last_action reverts the latest move or applied plan."

// MCP builds the MCP server: the six organizer tools, plus the risk
// radar's get_context_summary tool and file-context:// resource when a
// radar engine is configured.
func (s *Server) MCP() *server.MCPServer {
	m := mcpkit.NewServer("organizerd", s.o.Version, Instructions)
	m.AddTools(s.Tools()...)
	if s.o.Radar != nil && s.o.Radar.Engine != nil {
		roots := []*jail.Root{s.o.Root}
		m.AddTools(mcpkit.ContextSummaryTool(roots, s.o.Radar.Engine, s.log))
		mcpkit.RegisterFileContext(m, roots, s.o.Radar.Engine, s.log)
	}
	return m
}

const noArgsSchema = `{"type":"object","properties":{},"additionalProperties":false}`

// Tools returns the six tools with their handlers.
func (s *Server) Tools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcpkit.NewTool("list_files",
			"List the entries of the workspace, or of one folder inside it: for each, its name, size, kind (file, dir, symlink, special), category, whether plan_organize would move it, and if not, why (code, reason, rule, layer). Never follows symlinks. Changes nothing.",
			mcpkit.Annotations{Title: "List workspace files", ReadOnly: true, Idempotent: true},
			json.RawMessage(`{"type":"object","properties":{`+
				`"subdir":{"type":"string","description":"Folder to list, relative to the workspace (or absolute inside it). Omit for the workspace itself."}`+
				`},"additionalProperties":false}`)),
			Handler: mcpkit.Handle("list_files", s.log, s.listFiles)},
		{Tool: mcpkit.NewTool("plan_organize",
			"Propose moving each file at the top of the workspace into its category folder (Category/name). Changes nothing, not even folders. Returns plan_id, the moves (src, dest, category, size) and the skips, each with code, reason, rule and layer: POLICY_DENIED or PATH_ESCAPE skips are never moved by any tool; NEEDS_EXPLICIT_REQUEST skips are left alone unless the user names them (move_file). Paths are relative to the workspace. Pass plan_id to apply_plan.",
			mcpkit.Annotations{Title: "Plan organizing the workspace", ReadOnly: true, Idempotent: true},
			json.RawMessage(noArgsSchema)),
			Handler: mcpkit.Handle("plan_organize", s.log, s.planOrganize)},
		{Tool: mcpkit.NewTool("apply_plan",
			"Apply a plan from plan_organize, once. Every file is re-checked first (same file, size and modification time; destination still free; no symlink on the way); if anything changed since planning, nothing moves and the answer is STALE with a reason per file: plan again. Destination folders are created inside the workspace. Nothing is overwritten or deleted. The whole plan is one action for undo_last_action.",
			mcpkit.Annotations{Title: "Apply an organize plan"},
			json.RawMessage(`{"type":"object","properties":{`+
				`"plan_id":{"type":"string","description":"The plan_id returned by plan_organize (single use)."}`+
				`},"required":["plan_id"],"additionalProperties":false}`)),
			Handler: mcpkit.Handle("apply_plan", s.log, s.applyPlan)},
		{Tool: mcpkit.NewTool("move_file",
			"Move one file or folder the user named to a full destination path, both inside the workspace. Missing destination folders are created. Refused when the destination exists (never overwritten, never renamed around), when the source is a symbolic link or a special file, when a name has control characters, or when a path leaves the workspace. Use it for items plan_organize skipped with NEEDS_EXPLICIT_REQUEST. Undoable with undo_last_action.",
			mcpkit.Annotations{Title: "Move one file"},
			json.RawMessage(`{"type":"object","properties":{`+
				`"src":{"type":"string","description":"The file or folder to move, relative to the workspace (or absolute inside it)."},`+
				`"dest":{"type":"string","description":"Its full new path, including the file name, relative to the workspace (or absolute inside it). Must not exist yet."}`+
				`},"required":["src","dest"],"additionalProperties":false}`)),
			Handler: mcpkit.Handle("move_file", s.log, s.moveFile)},
		{Tool: mcpkit.NewTool("undo_last_action",
			"Revert the latest move_file or applied plan as one action, moving every file back to where it was. Refused, with nothing moved, if any original location is now occupied or any moved file has changed or gone since; the answer names each such file. Folders the action created are removed when empty.",
			mcpkit.Annotations{Title: "Undo the last action"},
			json.RawMessage(noArgsSchema)),
			Handler: mcpkit.Handle("undo_last_action", s.log, s.undo)},
		{Tool: mcpkit.NewTool("redo_last_action",
			"Re-apply the latest undone action, with the same checks as undo_last_action. Any new move or applied plan clears what can be redone.",
			mcpkit.Annotations{Title: "Redo the last undone action"},
			json.RawMessage(noArgsSchema)),
			Handler: mcpkit.Handle("redo_last_action", s.log, s.redo)},
	}
}

type noArgs struct{}

// Entry is one list_files row.
type Entry struct {
	Name      string         `json:"name"`
	Path      string         `json:"path"`
	Size      int64          `json:"size"`
	Kind      organize.Kind  `json:"kind"`
	Category  string         `json:"category,omitempty"`
	WouldMove bool           `json:"would_move"`
	Skip      *organize.Skip `json:"skip,omitempty"`
}

type listArgs struct {
	Subdir *string `json:"subdir"`
}

func (s *Server) listFiles(_ context.Context, _ mcp.CallToolRequest, a listArgs) result.OperationResult {
	start := time.Now()
	rel := "."
	if a.Subdir != nil && *a.Subdir != "" {
		r, err := s.o.Root.Clean(*a.Subdir)
		if err != nil {
			return result.Fail("list_files", err, nil, start)
		}
		rel = r
	}
	d, err := s.o.Root.OpenDir(rel)
	if err != nil {
		return result.Fail("list_files", err, nil, start)
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return result.Fail("list_files", err, nil, start)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	out := make([]Entry, 0, len(ents))
	truncated := false
	for _, e := range ents {
		if len(out) >= MaxListed*4 {
			truncated = true
			break
		}
		p := jail.Join(rel, e.Name)
		en := Entry{Name: quoteIfBad(e.Name), Path: quoteIfBad(p)}
		f, _ := s.evaluate(d, rel, e)
		en.Kind, en.Category = f.facts.Kind, f.facts.Category
		en.Size = f.size
		if rel != "." && f.skip == nil {
			en.Skip = &organize.Skip{Code: result.NeedsExplicitRequest, Rule: "not-top-level", Layer: organize.Restraint,
				Reason: "plan_organize only organizes the top of the workspace; move it with move_file if the user asks"}
		} else {
			en.Skip = f.skip
		}
		en.WouldMove = en.Skip == nil
		out = append(out, en)
	}
	return result.Success("list_files", fmt.Sprintf("%d entries in %s", len(out), rel),
		map[string]any{"path": rel, "entries": out, "count": len(out), "truncated": truncated}, start)
}

type evaluated struct {
	facts organize.Facts
	skip  *organize.Skip
	size  int64
	state jail.FileState
	dest  string
}

// evaluate applies the full rule set to one entry of d (at rel).
func (s *Server) evaluate(d *jail.Dir, rel string, e jail.Entry) (evaluated, bool) {
	var ev evaluated
	if jail.CheckName(e.Name) != nil {
		ev.facts = organize.Facts{Name: e.Name, Kind: organize.KindOfEntry(e.Type), BadName: true}
		ev.skip = s.o.Rules.Plan(ev.facts)
		return ev, false
	}
	info, err := d.Lstat(e.Name)
	if err != nil {
		ev.facts = organize.Facts{Name: e.Name, Kind: organize.KindOfEntry(e.Type)}
		code, reason := result.Classify(err)
		ev.skip = &organize.Skip{Code: code, Reason: reason, Rule: "unreadable", Layer: organize.Protection}
		return ev, false
	}
	p := jail.Join(rel, e.Name)
	ev.facts = s.o.Rules.FactsFor(p, info, s.o.Radar)
	ev.size, ev.state = info.Size, jail.StateOf(info)
	if ev.facts.Kind == organize.File && ev.facts.Category != "" {
		ev.dest = jail.Join(ev.facts.Category, e.Name)
		if rel != "." {
			ev.dest = jail.Join(jail.Join(rel, ev.facts.Category), e.Name)
		}
		ev.facts.DestOccupied = s.occupied(ev.dest)
	}
	ev.skip = s.o.Rules.Plan(ev.facts)
	return ev, ev.skip == nil
}

// occupied reports whether dest exists or its folder is not a real folder.
func (s *Server) occupied(dest string) bool {
	if _, err := s.o.Root.Lstat(dest); err == nil || result.CodeOf(err) != result.NotFound {
		return true
	}
	parent, _ := jail.Split(dest)
	if i, err := s.o.Root.Lstat(parent); err == nil && !i.IsDir() {
		return true
	}
	return false
}

func quoteIfBad(s string) string {
	if jail.CheckName(s) != nil && s != "." {
		return strconv.Quote(s)
	}
	return s
}

// PlannedMove is one move of a plan as shown.
type PlannedMove struct {
	Src      string `json:"src"`
	Dest     string `json:"dest"`
	Category string `json:"category"`
	Size     int64  `json:"size"`
}

// PlannedSkip is one skip of a plan as shown.
type PlannedSkip struct {
	Name   string         `json:"name"`
	Code   result.Code    `json:"code"`
	Reason string         `json:"reason"`
	Rule   string         `json:"rule"`
	Layer  organize.Layer `json:"layer"`
}

func (s *Server) planOrganize(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	d, err := s.o.Root.OpenDir(".")
	if err != nil {
		return result.Fail("plan_organize", err, nil, start)
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return result.Fail("plan_organize", err, nil, start)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	p := &plan{created: time.Now().UTC()}
	moves := []PlannedMove{}
	skips := []PlannedSkip{}
	skipCount := 0
	for _, e := range ents {
		if e.Type.IsDir() && s.o.Rules.IsCategoryFolder(e.Name) {
			continue // a destination, not something to organize
		}
		ev, ok := s.evaluate(d, ".", e)
		if !ok {
			skipCount++
			if len(skips) < MaxListed {
				skips = append(skips, PlannedSkip{Name: quoteIfBad(e.Name), Code: ev.skip.Code, Reason: ev.skip.Reason, Rule: ev.skip.Rule, Layer: ev.skip.Layer})
			}
			continue
		}
		p.moves = append(p.moves, journal.Move{Src: e.Name, Dst: ev.dest, State: ev.state})
		if len(moves) < MaxListed {
			moves = append(moves, PlannedMove{Src: e.Name, Dest: ev.dest, Category: ev.facts.Category, Size: ev.size})
		}
	}
	detail := map[string]any{"created": p.created.Format(time.RFC3339), "moves": moves, "move_count": len(p.moves),
		"skips": skips, "skip_count": skipCount, "truncated": len(moves) < len(p.moves) || len(skips) < skipCount}
	if len(p.moves) == 0 {
		detail["plan_id"] = ""
		return result.Success("plan_organize", fmt.Sprintf("nothing to move; %d skipped", skipCount), detail, start)
	}
	id := s.plans.Issue(p)
	detail["plan_id"] = id
	return result.Success("plan_organize", fmt.Sprintf("%d moves planned, %d skipped; nothing changed yet: call apply_plan with plan_id", len(p.moves), skipCount), detail, start)
}

type applyArgs struct {
	PlanID string `json:"plan_id"`
}

func (s *Server) applyPlan(ctx context.Context, req mcp.CallToolRequest, a applyArgs) result.OperationResult {
	start := time.Now()
	p, err := s.plans.Take(a.PlanID)
	if err != nil {
		return result.Fail("apply_plan", err, nil, start)
	}
	var intentID string
	out, err := s.o.Journal.Do("apply_plan", a.PlanID, p.moves, s.intent("apply_plan", map[string]any{"plan_id": a.PlanID}, &intentID))
	if err != nil && out.Action == nil && len(out.Failed) > 0 {
		// Anything changed since planning: the whole plan is stale.
		return s.finish("apply_plan", "", result.With("apply_plan", result.Stale,
			fmt.Sprintf("%d of %d planned moves no longer hold, so nothing was moved; call plan_organize again", len(out.Failed), len(p.moves)),
			map[string]any{"moved": 0, "stale": capFailures(out.Failed)}, start))
	}
	return s.report("apply_plan", intentID, out, err, start)
}

type moveArgs struct {
	Src  string `json:"src"`
	Dest string `json:"dest"`
}

func (s *Server) moveFile(_ context.Context, _ mcp.CallToolRequest, a moveArgs) result.OperationResult {
	start := time.Now()
	m, skip := s.checkMove(a.Src, a.Dest)
	if skip != nil {
		return result.With("move_file", skip.Code, skip.Reason,
			map[string]any{"src": quoteIfBad(a.Src), "dest": quoteIfBad(a.Dest), "rule": skip.Rule, "layer": skip.Layer}, start)
	}
	var intentID string
	out, err := s.o.Journal.Do("move_file", m.Src+" -> "+m.Dst, []journal.Move{m}, s.intent("move_file", map[string]any{"src": m.Src, "dest": m.Dst}, &intentID))
	return s.report("move_file", intentID, out, err, start)
}

// checkMove resolves src and dest and applies the protection layer.
func (s *Server) checkMove(src, dest string) (journal.Move, *organize.Skip) {
	escape := func(err error) *organize.Skip {
		code, _ := result.Classify(err)
		f := organize.Facts{Name: src, Escape: code == result.PathEscape, BadName: code != result.PathEscape}
		if sk := s.o.Rules.Protect(f); sk != nil {
			return sk
		}
		_, reason := result.Classify(err)
		return &organize.Skip{Code: code, Reason: reason, Rule: "invalid-path", Layer: organize.Protection}
	}
	sr, err := s.o.Root.Clean(src)
	if err != nil {
		return journal.Move{}, escape(err)
	}
	dr, err := s.o.Root.Clean(dest)
	if err != nil {
		return journal.Move{}, escape(err)
	}
	if sr == "." || dr == "." {
		return journal.Move{}, &organize.Skip{Code: result.InvalidRequest, Reason: "the workspace itself cannot be moved, nor replaced", Rule: "invalid-path", Layer: organize.Protection}
	}
	info, err := s.o.Root.Lstat(sr)
	if err != nil {
		if result.CodeOf(err) == result.PathEscape {
			return journal.Move{}, escape(err)
		}
		code, reason := result.Classify(err)
		return journal.Move{}, &organize.Skip{Code: code, Reason: reason, Rule: "source", Layer: organize.Protection}
	}
	f := s.o.Rules.FactsFor(sr, info, nil)
	_, dname := jail.Split(dr)
	if jail.CheckName(dname) != nil {
		f.BadName = true
	}
	f.DestOccupied = s.occupied(dr)
	if sk := s.o.Rules.Protect(f); sk != nil {
		return journal.Move{}, sk
	}
	return journal.Move{Src: sr, Dst: dr, State: jail.StateOf(info)}, nil
}

func (s *Server) undo(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	var intentID string
	out, err := s.o.Journal.Undo(s.intentAction("undo_last_action", &intentID))
	return s.report("undo_last_action", intentID, out, err, start)
}

func (s *Server) redo(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	start := time.Now()
	var intentID string
	out, err := s.o.Journal.Redo(s.intentAction("redo_last_action", &intentID))
	return s.report("redo_last_action", intentID, out, err, start)
}

// intent returns the journal hook that writes the audit intent (fail-closed).
func (s *Server) intent(action string, fields map[string]any, idOut *string) journal.Hook {
	return func(a *journal.Action) error {
		f := map[string]any{"action_id": a.ID, "moves": len(a.Moves)}
		for k, v := range fields {
			f[k] = v
		}
		if len(a.Moves) <= 20 {
			f["paths"] = pathsOf(a.Moves)
		}
		id, err := s.o.Audit.Intent(action, f)
		*idOut = id
		return err
	}
}

func (s *Server) intentAction(action string, idOut *string) journal.Hook {
	return func(a *journal.Action) error {
		return s.intent(action, map[string]any{"of": a.Tool, "label": a.Label}, idOut)(a)
	}
}

func pathsOf(ms []journal.Move) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, strconv.Quote(m.Src)+" -> "+strconv.Quote(m.Dst))
	}
	return out
}

func capFailures(f []journal.Failure) []journal.Failure {
	if len(f) > MaxListed {
		return f[:MaxListed]
	}
	return f
}

// report turns a journal outcome into the tool's result and the audit outcome.
func (s *Server) report(action, intentID string, out journal.Outcome, err error, start time.Time) result.OperationResult {
	if out.Action == nil {
		detail := map[string]any{"moved": 0}
		if len(out.Failed) > 0 {
			detail["refused"] = capFailures(out.Failed)
		}
		r := result.Fail(action, err, detail, start)
		if len(out.Failed) > 1 {
			r = result.With(action, result.Stale, "nothing was moved: "+reasonOf(err), detail, start)
		}
		return s.finish(action, intentID, r)
	}
	moves := make([]PlannedMove, 0, min(len(out.Action.Moves), MaxListed))
	for _, m := range out.Action.Moves {
		if len(moves) >= MaxListed {
			break
		}
		moves = append(moves, PlannedMove{Src: m.Src, Dest: m.Dst, Size: m.State.Size})
	}
	detail := map[string]any{"action_id": out.Action.ID, "moved": len(out.Action.Moves), "moves": moves,
		"truncated": len(moves) < len(out.Action.Moves)}
	undo, redo := s.o.Journal.Depth()
	detail["undo_depth"], detail["redo_depth"] = undo, redo
	if len(out.Failed) > 0 {
		detail["failed"] = capFailures(out.Failed)
		return s.finish(action, intentID, result.With(action, result.OperationFailed,
			fmt.Sprintf("moved %d, %d could not be moved (see failed); undo_last_action reverts the moved ones", len(out.Action.Moves), len(out.Failed)), detail, start))
	}
	verb := map[string]string{"apply_plan": "moved", "move_file": "moved", "undo_last_action": "moved back", "redo_last_action": "moved again"}[action]
	return s.finish(action, intentID, result.Success(action, fmt.Sprintf("%s %d item(s); undo_last_action reverts this", verb, len(out.Action.Moves)), detail, start))
}

func (s *Server) finish(action, intentID string, r result.OperationResult) result.OperationResult {
	if intentID != "" {
		fields := map[string]any{}
		if m, ok := r.Detail.(map[string]any); ok {
			fields["moved"] = m["moved"]
		}
		if err := s.o.Audit.Outcome(intentID, action, r.Code, fields); err != nil {
			s.log.Error("audit outcome not recorded", "action", action)
		}
	}
	return r
}

func reasonOf(err error) string {
	_, r := result.Classify(err)
	return r
}
