// Package organizer is organizerd's MCP wiring: it builds the tools,
// decodes their arguments, calls the pipeline in safety/organize (one call
// per flow: organize.Organizer's Plan, Apply, Move, Undo, Redo) and shows
// its Outcome as the tool's answer (answer.go). It decides nothing about
// what may be moved, asks nobody, writes no record and moves nothing
// itself: the rules, the checks, the question to the person, the audit
// records and the journal live in safety, in that pipeline.
package organizer

import (
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
)

// MaxListed bounds how many moves and skips one response lists; a plan
// itself is never truncated.
const MaxListed = 500

// Options configure a Server: the pipeline's options (workspace, rules,
// radar, journal, audit log, who confirms what) and the version.
type Options struct {
	organize.Options
	Version string
}

// Server holds organizerd's state: the pipeline, which holds the plans.
type Server struct {
	o   Options
	org *organize.Organizer
	ws  organize.Workspace
	log *slog.Logger
}

// New builds a Server.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	org := organize.NewOrganizer(o.Options)
	return &Server{o: o, org: org, ws: org.Workspace(), log: o.Logger}
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
