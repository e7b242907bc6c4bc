// Package organizer is organizerd's MCP wiring: it builds the tools and
// turns their calls into safety/organize rule evaluations and
// safety/journal actions. It decides nothing about what may be moved; the
// rules and checks live in safety.
package organizer

import (
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
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
	// Asker asks the person (MCP elicitation) before the operations whose
	// who-confirms setting is approval.Human; nil: the agent's call is the
	// confirmation, as before [approval].
	Asker *approval.Asker
	// ApplyPlan is who confirms apply_plan ([approval] apply_plan).
	ApplyPlan approval.Who
	// MoveFile is who confirms move_file, undo_last_action and
	// redo_last_action ([approval] move_file).
	MoveFile approval.Who
}

// Server holds organizerd's state.
type Server struct {
	o     Options
	ws    organize.Workspace
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
	ws := organize.Workspace{Root: o.Root, Rules: o.Rules, Radar: o.Radar}
	return &Server{o: o, ws: ws, plans: ids.NewStore[*plan]("p", o.PlanTTL, 64), log: o.Logger}
}

// Instructions is sent to clients at initialize.
const Instructions = "organizerd tidies one workspace folder by moving files into category folders (Images, Documents, ...). " +
	"It never deletes and never overwrites. Call plan_organize, show the user the moves and skips, then apply_plan(plan_id). " +
	"Skips with NEEDS_EXPLICIT_REQUEST are safe but left alone on purpose: move them with move_file only when the user names them. " +
	"undo_last_action reverts the latest move or applied plan."

// MCP builds the MCP server: the organizer tools, plus the risk
// radar's get_context_summary tool and file-context:// resource when a
// radar engine is configured, and, for clients that speak MCP Apps only,
// plan_organize's view (PlanView).
func (s *Server) MCP() *server.MCPServer {
	m := mcpkit.NewServer("organizerd", s.o.Version, Instructions, mcpkit.WithViews(PlanView())...)
	m.AddTools(s.Tools()...)
	mcpkit.AddPrompts(m, Prompts()...)
	if s.o.Radar != nil && s.o.Radar.Engine != nil {
		roots := []*jail.Root{s.o.Root}
		m.AddTools(mcpkit.ContextSummaryTool(roots, s.o.Radar.Engine, s.log))
		mcpkit.RegisterFileContext(m, roots, s.o.Radar.Engine, s.log)
	}
	return m
}

const noArgsSchema = `{"type":"object","properties":{},"additionalProperties":false}`

// Tools returns the tools with their handlers, one constructor each
// (list.go, plan.go, move.go, undo.go).
func (s *Server) Tools() []server.ServerTool {
	return []server.ServerTool{s.listTool(), s.planTool(), s.applyTool(), s.moveTool(), s.undoTool(), s.redoTool()}
}

type noArgs struct{}
