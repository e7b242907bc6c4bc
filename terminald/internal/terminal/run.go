package terminal

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/runner"
)

// runAction is run_command's name: the tool's, its results' action, and
// the audit records' (runner.Options.Action).
const runAction = "run_command"

// runTool is run_command: one command line, run in the jail under the
// policy and the kernel boundary.
func (s *Server) runTool() server.ServerTool {
	t := server.ServerTool{Tool: mcpkit.NewTool(runAction,
		"Run one command line inside the jail directory, without a shell, and return its exit code, stdout and stderr. The line is split like a POSIX shell would split a simple command (quotes group words; inside quotes ; | & > $ are literal text), but shell operators, redirections, variables, globs and ~ are refused rather than interpreted. Only allowlisted programs run, resolved by name on the server's PATH; argument rules refuse dangerous options (git -c, find -exec, tar --to-command, ...). Commands the policy asks about (under the shipped policy: git push, deleting branches or stashes, discarding uncommitted changes) run only after the person approves them in the client, which asks them (MCP elicitation: allow once, allow this exact command for the rest of the session, or deny); that confirmation is the person's, never the agent's, and detail.approval says who approved. A client that cannot ask gets NEEDS_EXPLICIT_REQUEST, unless the policy's [approval] fallback lets the agent confirm by calling. The process runs with a private HOME and TMPDIR, no stdin (unless it runs as a session), a fixed environment, resource limits, a timeout that kills every process it started, and kernel confinement (on Linux: its own namespaces showing only the jail and system directories, Landlock, seccomp, no capabilities, and only its own loopback unless the operator allowed the network or a proxy). Secrets in the output are redacted, terminal control characters (escape sequences, other control characters but newline and tab, bidi overrides, bytes that are not UTF-8) are shown as visible escapes such as \\x1b and \\u202e (detail.neutralised counts them), then each stream is capped. At most a fixed number of commands run at once; a call beyond it waits in a bounded queue (reported as progress notifications when the call has a progressToken) or, when the queue is full or the wait outlasts the timeout, runs nothing and gets LIMIT_EXCEEDED with detail.limit = \"concurrency\": call again later. detail.paths gives the risk radar's view (as explain_command shows it) of the arguments that name existing paths, and the first 10 HIGH_RISK ones also come as resource_link items. A non-zero exit status is still ok:true: the command ran. While the command runs, a call with a progressToken gets a progress notification about once a second with the time so far and the latest output lines (redacted), so a client that resets its request timeout on progress waits for a long build or test run up to the policy's timeout. Processes the command starts in the background (& in a script, nohup, setsid, daemons) are ended when the command ends: for a dev server or watcher, use background: true (below). When the sandbox refused something during the run (a host name looked up with the network denied, a host the proxy refused, a program not in the command's view, a write to a protected path), detail.sandbox_refused lists it and the reason names the policy key that would allow it: the failure was the boundary's, not the program's. A client that supports MCP tasks may call it as a task: the command then runs as a session with no timeout, the task's result comes when it ends (detail as read_output's, with the whole output still kept), and cancelling the task stops it. With background: true the command runs as a session instead (a dev server, a watcher, a REPL, a long build): the answer comes once it has started (or after wait_ms of early output) with detail.session.session_id, the output so far and detail.cursor; it keeps running in its own sandbox with the same policy, approval, limits and audit but no timeout, until it exits, stop_session stops it, or its idle or lifetime bound ends it; read_output reads what it prints, send_input writes its standard input (tty: true gives it a pseudo-terminal instead of pipes), list_sessions lists them. A dev server listens on the session's own loopback; when the operator set [terminal.sessions] publish_ports, each port it listens on is reachable from the host at the URL in detail.session.ports (127.0.0.1 only). At most [terminal.sessions] max sessions run at once (LIMIT_EXCEEDED with detail.limit = \"sessions\" beyond it), and each holds one of the concurrent slots.",
		mcpkit.Annotations{Title: "Run a command in the jail", Destructive: true, OpenWorld: false},
		json.RawMessage(`{"type":"object","properties":{`+
			`"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The command line, e.g. \"ls -la src\" or \"git log -n 5\". No shell syntax."},`+
			`"cwd":{"type":"string","maxLength":4096,"description":"Working directory: relative to the jail root, or absolute inside it. Default: the jail root. Symbolic links and .. that leave the jail are refused."},`+
			`"background":{"type":"boolean","description":"Start the command as a session that keeps running after this answer (a dev server, a watcher, a REPL, a long build): no timeout, ended by stop_session or its idle or lifetime bound. Default false."},`+
			`"wait_ms":{"type":"integer","minimum":0,"maximum":60000,"description":"With background: wait up to this long for early output or the command's end before answering. Default 0: answer once it has started."},`+
			`"tty":{"type":"boolean","description":"With background: run the command on a pseudo-terminal instead of pipes, for programs that need one (REPL prompts and line editing, colour); its output is still redacted and neutralised. Default false."}`+
			`},"required":["command"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle(runAction, s.o.Logger, s.runCommand)}
	// Task-aware clients may run it as a task (runAsTask).
	t.Tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	return t
}

type runArgs struct {
	Command    string  `json:"command"`
	Cwd        *string `json:"cwd"`
	Background *bool   `json:"background"`
	WaitMS     *int    `json:"wait_ms"`
	TTY        *bool   `json:"tty"`
}

// RunDetail is run_command's detail when something ran.
type RunDetail struct {
	Argv        []string `json:"argv"`
	ExitCode    int      `json:"exit_code"`
	Signal      string   `json:"signal,omitempty"`
	Stdout      string   `json:"stdout"`
	Stderr      string   `json:"stderr"`
	Truncated   bool     `json:"truncated"`
	Confinement string   `json:"confinement"`
	// Neutralised counts the terminal control characters of stdout and
	// stderr shown as visible escapes (\x1b, \u202e); always present, 0
	// when there were none or [terminal] raw_output is true.
	Neutralised int `json:"neutralised"`
	// Limit names the limit that stopped the command: memory, processes,
	// cpu, file_size, open_files, disk or timeout.
	Limit string `json:"limit,omitempty"`
	// Paths is the risk radar's view of the arguments that name paths
	// existing in the jail once the command ended (relative words taken
	// from cwd), as explain_command shows them; at most maxPathViews
	// arguments are looked at.
	Paths []PathView `json:"paths"`
	// Approval is present when the command needed a person's approval:
	// who approved it (by "human", scope "once" or "session"; by "agent"
	// when the client cannot ask and the policy's fallback lets it).
	Approval *approval.Approval `json:"approval,omitempty"`
	// Protected lists each protected path (git hooks and config, editor
	// and agent-client settings, .envrc, ...) the command created,
	// changed or removed: what was attempted and how it was undone before
	// this answer.
	Protected []protect.Change `json:"protected,omitempty"`
	// SandboxRefused lists what the sandbox refused the command during
	// its run: host names looked up with no resolver (network "deny" or
	// "proxy"), requests the proxy refused, programs outside the
	// command's view it could not find, protected paths it wrote (undone).
	// The reason names the key that would allow each. Absent when nothing
	// was refused.
	SandboxRefused []runner.Refusal `json:"sandbox_refused,omitempty"`
}

func (s *Server) runCommand(ctx context.Context, call mcp.CallToolRequest, a runArgs) result.OperationResult {
	start := time.Now()
	ask := s.o.Asker.For(call)
	queued, running := callProgress(ctx, call)
	req := runner.Request{Line: a.Command, Answered: ask.Retry, Ask: ask.Ask, Progress: queued, Running: running}
	if a.Cwd != nil {
		req.Cwd = *a.Cwd
	}
	if call.Params.Task != nil {
		// A task-aware client's call runs as a task (MCP tasks): the same
		// session, followed to its end here; tasks/cancel stops it.
		return s.runAsTask(ctx, req, a.TTY != nil && *a.TTY)
	}
	if a.Background != nil && *a.Background {
		wait := 0
		if a.WaitMS != nil {
			wait = min(max(*a.WaitMS, 0), maxWaitMS)
		}
		return s.startSession(ctx, req, wait, a.TTY != nil && *a.TTY)
	}
	if a.WaitMS != nil || a.TTY != nil {
		return result.With(runAction, result.InvalidRequest, "wait_ms and tty apply only with background: true; nothing ran", nil, start)
	}
	out := s.run.Run(ctx, req)
	switch {
	case out.Pending:
		return result.OperationResult{} // the question is the answer; it is not sent
	case !out.Ran && (out.Approval != nil || out.Limit != ""):
		detail := map[string]any{}
		if out.Approval != nil {
			detail["approval"] = out.Approval
		}
		if out.Limit != "" {
			detail["limit"] = out.Limit
		}
		return result.With(runAction, out.Code, out.Reason, detail, start)
	case !out.Ran:
		return result.With(runAction, out.Code, out.Reason, nil, start)
	}
	return result.With(runAction, out.Code, out.Reason, RunDetail{Argv: out.Argv, ExitCode: out.ExitCode, Signal: out.Signal,
		Stdout: string(out.Stdout), Stderr: string(out.Stderr), Truncated: out.Truncated, Confinement: out.Confinement,
		Neutralised: out.Neutralised, Limit: out.Limit, Paths: s.existingPaths(ctx, req.Cwd, out.Argv), Approval: out.Approval,
		Protected: out.Protected, SandboxRefused: out.Refused}, start)
}

// existingPaths is the radar's view of the arguments of argv that name
// paths existing in the jail, relative words taken from cwd (the request's
// working directory, "" for the jail root).
func (s *Server) existingPaths(ctx context.Context, cwd string, argv []string) []PathView {
	views := []PathView{}
	if len(argv) < 2 {
		return views
	}
	base := "."
	if cwd != "" {
		if rel, err := s.o.Root.Clean(cwd); err == nil {
			base = rel
		}
	}
	for _, v := range s.pathViews(ctx, base, argv[1:]) {
		if v.Exists && v.Descriptor != nil {
			views = append(views, v)
		}
	}
	return views
}

// callProgress turns the runner's reports about the call into
// notifications/progress for its progressToken (nothing without one):
// while it waits for a slot, where it stands in the queue; while its
// command runs, about once a second, the time so far and the latest
// output lines (redacted). progress counts the reports of the call, so it
// only grows; a client that resets its request timeout on progress keeps
// waiting for a long command until the policy's timeout.
func callProgress(ctx context.Context, call mcp.CallToolRequest) (func(runner.QueueProgress), func(runner.RunProgress)) {
	if call.Params.Meta == nil || call.Params.Meta.ProgressToken == nil {
		return nil, nil
	}
	send := mcpkit.Progress(ctx, call)
	var mu sync.Mutex
	n := 0
	report := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		n++
		send(float64(n), 0, msg)
	}
	return func(p runner.QueueProgress) { report(p.Message()) }, func(p runner.RunProgress) { report(p.Message()) }
}
