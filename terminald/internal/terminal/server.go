// Package terminal is terminald's MCP surface: run_command and
// explain_command, one constructor each (run.go, explain.go), and the
// session tools read_output, send_input, stop_session and list_sessions
// (session.go), wired onto the safety core.
//
// It decides nothing about safety itself. The whole run pipeline (policy,
// working directory in the jail, intent record, sandbox, redaction, outcome
// record) is safety/runner's; this package only decodes arguments and
// translates the runner's Outcome or Evaluation into a result.
package terminal

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/runner"
)

// PathRadar is the hook through which explain_command shows the risk
// radar's view of the path arguments of a command. *risk.Engine satisfies
// it; nil leaves the view out.
type PathRadar interface {
	ClassifyPath(root, rel string, isDir bool) (risk.Descriptor, error)
}

// Options configure a Server: the runner's (Root, StateDir and Audit are
// required), the radar, the version reported to clients, and the Asker
// through which a person approves an ask decision.
type Options struct {
	runner.Options
	Radar   PathRadar
	Version string
	// Asker asks the person, through the client, about a command the
	// policy asks about. Nil: such a command is refused with
	// NEEDS_EXPLICIT_REQUEST and never runs.
	Asker *approval.Asker
}

// Server is terminald's MCP surface over one runner.
type Server struct {
	o     Options
	run   *runner.Runner
	tasks *taskRouter // run_command as an MCP task (task.go)
}

// New builds the runner (runner.New: it refuses bad options with a
// *result.Error), whose runs the audit log names run_command, and the
// server around it.
func New(o Options) (*Server, error) {
	o.Action = runAction
	r, err := runner.New(o.Options)
	if err != nil {
		return nil, err
	}
	o.Options = r.Options()
	return &Server{o: o, run: r, tasks: newTaskRouter()}, nil
}

// Close ends the runner (runner.Runner.Close).
func (s *Server) Close() { s.run.Close() }

// NoteProxyRefusal attributes a refusal of the filtering proxy to the run
// that asked (runner.Runner.NoteProxyRefusal): its answer lists it in
// detail.sandbox_refused.
func (s *Server) NoteProxyRefusal(r proxy.Refusal) { s.run.NoteProxyRefusal(r) }

// Prewarm readies the first command's sandbox (runner.Runner.Prewarm).
func (s *Server) Prewarm() { s.run.Prewarm() }

// Confinement describes the confinement commands get, as logged at startup.
func (s *Server) Confinement() string { return s.run.Confinement() }

// Instructions is sent to clients at initialize.
const Instructions = "terminald runs single commands without a shell inside one operator-fixed directory (the jail), " +
	"under a deny-first allowlist and kernel confinement. Call explain_command first when unsure whether a command is allowed; " +
	"run_command returns stdout, stderr and the exit code, with secrets redacted and output capped. " +
	"There is no shell: pipes, redirections, ;, &&, $VAR and globs are refused; quote arguments that contain such characters. " +
	"Long-running commands (dev servers, watchers, REPLs, long builds) run as sessions: run_command with background: true, " +
	"then read_output, send_input, stop_session and list_sessions."

// MCP builds the MCP server with exactly the tools of Tools, and the risk
// radar's file-context://{+path} resource template over the jail when the
// radar is a *risk.Engine.
func (s *Server) MCP() *server.MCPServer {
	// run_command may run as an MCP task (tasks/get, tasks/result,
	// tasks/cancel, tasks/list): runAsTask.
	m := mcpkit.NewServer("terminald", s.o.Version, Instructions, server.WithTaskCapabilities(true, true, true),
		server.WithTaskHooks(s.tasks.hooks()), server.WithToolHandlerMiddleware(s.tasks.middleware))
	m.AddTools(s.Tools()...)
	mcpkit.AddPrompts(m, Prompts()...)
	if eng, ok := s.o.Radar.(*risk.Engine); ok && eng != nil {
		mcpkit.RegisterFileContext(m, []*jail.Root{s.o.Root}, eng, s.o.Logger)
	}
	return m
}

// Tools returns the tools with their handlers, one constructor each
// (run.go, explain.go, session.go), and, when the radar is a *risk.Engine, its
// get_context_summary over the jail (mcpkit.ContextSummaryTool).
func (s *Server) Tools() []server.ServerTool {
	tools := []server.ServerTool{s.runTool(), s.explainTool(), s.readTool(), s.inputTool(), s.stopTool(), s.listTool()}
	if eng, ok := s.o.Radar.(*risk.Engine); ok && eng != nil {
		tools = append(tools, mcpkit.ContextSummaryTool([]*jail.Root{s.o.Root}, eng, s.o.Logger))
	}
	return tools
}
