package sweep

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/reclaim"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// Options configure a Server.
type Options struct {
	Roots     []*jail.Root
	Disable   []string
	TicketTTL time.Duration
	MaxFinds  int
	Audit     *audit.Log
	Logger    *slog.Logger
	Version   string
	// Radar answers the file-context resource and get_context_summary, and
	// describes what inside each find is not IGNORABLE. When nil, New
	// builds an engine with the built-in rule packs only.
	Radar *risk.Engine
	// Asker asks the person before a confirmed reclaim deletes, when
	// Confirmer ([approval] reclaim) is approval.Human. Without an Asker the
	// agent's confirm: "delete" alone deletes.
	Asker     *approval.Asker
	Confirmer approval.Who
	// AllowTracked ([sweep] allow_tracked) lets finds that hold files git
	// tracks be reclaimed (reclaim.Inside.GitKeep).
	AllowTracked bool
}

// Server holds sweepd's state: the fixed roots and the reclaimer, which
// holds the ticket store and the audit log.
type Server struct {
	roots     []*jail.Root
	ix        *index
	targets   []Target
	reclaimer *reclaim.Reclaimer
	maxFinds  int
	log       *slog.Logger
	version   string
	radar     *risk.Engine
	asker     *approval.Asker
	// allowTracked is Options.AllowTracked.
	allowTracked bool
}

// New builds a Server. Unknown kinds in Disable are an error.
func New(o Options) (*Server, error) {
	disabled := map[string]bool{}
	known := map[string]bool{}
	for _, t := range Catalog {
		known[t.Kind] = true
	}
	for _, k := range o.Disable {
		if !known[k] {
			return nil, fmt.Errorf("sweep.disable: unknown kind %q", k)
		}
		disabled[k] = true
	}
	if o.TicketTTL <= 0 {
		o.TicketTTL = time.Hour
	}
	if o.MaxFinds <= 0 {
		o.MaxFinds = 500
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Radar == nil {
		eng, err := risk.NewEngine(risk.Options{Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		o.Radar = eng
	}
	var enabled []Target
	for _, t := range Catalog {
		if !disabled[t.Kind] {
			enabled = append(enabled, t)
		}
	}
	ix := newIndex(Catalog, disabled)
	kinds := make(map[string]reclaim.Kind, len(ix.kinds))
	for k, t := range ix.kinds {
		kinds[k] = reclaim.Kind{Markers: t.Markers, Inside: t.Inside}
	}
	rc := reclaim.New(reclaim.Options{Kinds: kinds, KeepFile: KeepFile, TTL: o.TicketTTL, Audit: o.Audit, Logger: o.Logger,
		Asker: o.Asker, Confirmer: o.Confirmer, Radar: o.Radar, AllowTracked: o.AllowTracked})
	return &Server{roots: o.Roots, ix: ix, targets: enabled, reclaimer: rc,
		maxFinds: o.MaxFinds, log: o.Logger, version: o.Version, radar: o.Radar, asker: o.Asker, allowTracked: o.AllowTracked}, nil
}

// Instructions is sent to clients at initialize.
const Instructions = "sweepd finds regenerable developer directories (node_modules, target, .venv, __pycache__, build outputs) " +
	"inside the roots the operator fixed, and deletes them only by the ids a scan returned. " +
	"Call scan, show the user the finds, then reclaim(ids) for a dry run, and reclaim(ids, confirm: \"delete\") only when the user agreed; " +
	"under the shipped policy sweepd then asks the person in the client before deleting, and only their answer counts."

// MCP builds the MCP server with exactly the tools of Tools and the risk radar's
// file-context://{+path} resource template over the roots, and, for clients
// that speak MCP Apps only, scan's view (ScanView).
func (s *Server) MCP() *server.MCPServer {
	m := mcpkit.NewServer("sweepd", s.version, Instructions, mcpkit.WithViews(ScanView())...)
	m.AddTools(s.Tools()...)
	mcpkit.AddPrompts(m, Prompts()...)
	mcpkit.RegisterFileContext(m, s.roots, s.radar, s.log)
	return m
}

// Tools returns the tools with their handlers, one constructor each
// (targets_tool.go, scan_tool.go, reclaim.go), and the risk radar's
// get_context_summary over the roots (mcpkit.ContextSummaryTool: a path is
// absolute inside a root, or relative when there is one root, as in scan).
func (s *Server) Tools() []server.ServerTool {
	return []server.ServerTool{s.listTargetsTool(), s.scanTool(), s.reclaimTool(),
		mcpkit.ContextSummaryTool(s.roots, s.radar, s.log)}
}

type noArgs struct{}

func human(b int64) string { return reclaim.Size(b) }
