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
	return server.ServerTool{Tool: mcpkit.NewTool(runAction,
		"Run one command line inside the jail directory, without a shell, and return its exit code, stdout and stderr. The line is split like a POSIX shell would split a simple command (quotes group words; inside quotes ; | & > $ are literal text), but shell operators, redirections, variables, globs and ~ are refused rather than interpreted. Only allowlisted programs run, resolved by name on the server's PATH; argument rules refuse dangerous options (git -c, find -exec, tar --to-command, ...). Commands the policy asks about (under the shipped policy: git push, deleting branches or stashes, discarding uncommitted changes) run only after the person approves them in the client, which asks them (MCP elicitation: allow once, allow this exact command for the rest of the session, or deny); that confirmation is the person's, never the agent's, and detail.approval says who approved. A client that cannot ask gets NEEDS_EXPLICIT_REQUEST, unless the policy's [approval] fallback lets the agent confirm by calling. The process runs with a private HOME and TMPDIR, no stdin, a fixed environment, resource limits, a timeout that kills every process it started, and kernel confinement (on Linux: its own namespaces showing only the jail and system directories, Landlock, seccomp, no capabilities, and only its own loopback unless the operator allowed the network or a proxy). Secrets in the output are redacted, terminal control characters (escape sequences, other control characters but newline and tab, bidi overrides, bytes that are not UTF-8) are shown as visible escapes such as \\x1b and \\u202e (detail.neutralised counts them), then each stream is capped. At most a fixed number of commands run at once; a call beyond it waits in a bounded queue (reported as progress notifications when the call has a progressToken) or, when the queue is full or the wait outlasts the timeout, runs nothing and gets LIMIT_EXCEEDED with detail.limit = \"concurrency\": call again later. detail.paths gives the risk radar's view (as explain_command shows it) of the arguments that name existing paths, and the first 10 HIGH_RISK ones also come as resource_link items. A non-zero exit status is still ok:true: the command ran. While the command runs, a call with a progressToken gets a progress notification about once a second with the time so far and the latest output lines (redacted), so a client that resets its request timeout on progress waits for a long build or test run up to the policy's timeout. Processes the command starts in the background (& in a script, nohup, setsid, daemons) are ended when the command ends: run_command cannot keep a dev server or watcher running. When the sandbox refused something during the run (a host name looked up with the network denied, a host the proxy refused, a program not in the command's view, a write to a protected path), detail.sandbox_refused lists it and the reason names the policy key that would allow it: the failure was the boundary's, not the program's.",
		mcpkit.Annotations{Title: "Run a command in the jail", Destructive: true, OpenWorld: false},
		json.RawMessage(`{"type":"object","properties":{`+
			`"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The command line, e.g. \"ls -la src\" or \"git log -n 5\". No shell syntax."},`+
			`"cwd":{"type":"string","maxLength":4096,"description":"Working directory: relative to the jail root, or absolute inside it. Default: the jail root. Symbolic links and .. that leave the jail are refused."}`+
			`},"required":["command"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle(runAction, s.o.Logger, s.runCommand)}
}

type runArgs struct {
	Command string  `json:"command"`
	Cwd     *string `json:"cwd"`
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
