package terminal

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/runner"
)

// The session tools' names (and their results' actions). A session is
// started by run_command with background: true (runCommand).
const (
	readAction  = "read_output"
	inputAction = "send_input"
	stopAction  = "stop_session"
	listAction  = "list_sessions"
)

// maxWaitMS bounds wait_ms (run_command in the background, read_output).
const maxWaitMS = 60000

// SessionDetail is the detail of run_command in the background, read_output
// and stop_session: the session, its output from the cursor on, and where
// the next read continues.
type SessionDetail struct {
	runner.SessionOutput
	// Argv, Confinement and Approval are set when the session starts.
	Argv        []string           `json:"argv,omitempty"`
	Confinement string             `json:"confinement,omitempty"`
	Approval    *approval.Approval `json:"approval,omitempty"`
}

// startSession is run_command with background: true.
func (s *Server) startSession(ctx context.Context, req runner.Request, waitMS int, tty bool) result.OperationResult {
	start := time.Now()
	out, so := s.run.StartSession(ctx, runner.SessionRequest{Request: req, Wait: time.Duration(waitMS) * time.Millisecond, TTY: tty})
	switch {
	case out.Pending:
		return result.OperationResult{}
	case !out.Ran:
		detail := map[string]any{}
		if out.Approval != nil {
			detail["approval"] = out.Approval
		}
		if out.Limit != "" {
			detail["limit"] = out.Limit
		}
		if so.Session.ID != "" {
			detail["session"] = so.Session
		}
		if len(detail) == 0 {
			return result.With(runAction, out.Code, out.Reason, nil, start)
		}
		return result.With(runAction, out.Code, out.Reason, detail, start)
	}
	return result.With(runAction, out.Code, sessionReason(so.Session, out.Reason), SessionDetail{SessionOutput: so, Argv: out.Argv,
		Confinement: out.Confinement, Approval: out.Approval}, start)
}

// sessionReason says where a session stands.
func sessionReason(i runner.SessionInfo, started string) string {
	if i.Ended != nil {
		return "the session " + i.ID + " has ended: " + i.Reason
	}
	if started != "" {
		return started + " (session_id " + i.ID + ")"
	}
	return "the session " + i.ID + " is running"
}

func (s *Server) readTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool(readAction,
		"Read the output of a session (a command started by run_command with background: true) from a cursor on: stdout and stderr interleaved as the command wrote them, secrets redacted and terminal control characters shown as visible escapes, as run_command's output is. Pass the cursor of the previous answer as since to get only what is new (0: everything still kept). A session keeps its last max_output_bytes of output; dropped_bytes says how much after your cursor was lost before you read it. wait_ms waits up to that long for new output or the session's end when there is none yet. filter keeps only the lines that match a regular expression (Go RE2 syntax) and counts the others in filtered_lines. A line still being written is shown once it ends or the command has been quiet for a second (a prompt such as >>>). detail.session says whether the command still runs, and its exit status or the limit that ended it.",
		mcpkit.Annotations{Title: "Read a session's output", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"session_id":{"type":"string","minLength":1,"maxLength":64,"description":"The session, as run_command or list_sessions gave it."},`+
			`"since":{"type":"integer","minimum":0,"description":"The cursor to read from: the previous answer's detail.cursor. Default 0."},`+
			`"wait_ms":{"type":"integer","minimum":0,"maximum":60000,"description":"Wait up to this long for new output when there is none. Default 0."},`+
			`"filter":{"type":"string","maxLength":1024,"description":"Keep only the lines matching this regular expression (Go RE2 syntax)."}`+
			`},"required":["session_id"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle(readAction, s.o.Logger, s.readOutput)}
}

type readArgs struct {
	SessionID string  `json:"session_id"`
	Since     *int64  `json:"since"`
	WaitMS    *int    `json:"wait_ms"`
	Filter    *string `json:"filter"`
}

func (s *Server) readOutput(ctx context.Context, _ mcp.CallToolRequest, a readArgs) result.OperationResult {
	start := time.Now()
	var since int64
	if a.Since != nil {
		since = *a.Since
	}
	wait := 0
	if a.WaitMS != nil {
		wait = min(max(*a.WaitMS, 0), maxWaitMS)
	}
	filter := ""
	if a.Filter != nil {
		filter = *a.Filter
	}
	so, err := s.run.ReadSession(ctx, a.SessionID, since, time.Duration(wait)*time.Millisecond, filter)
	if err != nil {
		return result.Fail(readAction, err, nil, start)
	}
	return result.With(readAction, result.OK, sessionReason(so.Session, ""), SessionDetail{SessionOutput: so}, start)
}

func (s *Server) inputTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool(inputAction,
		"Send text to the standard input of a session (a command started by run_command with background: true), such as a line for a REPL; include the newline (\"1+1\\n\"). eof: true closes its input after the text (on a tty: true session, sends the terminal's end-of-input character), which ends a REPL or a command that reads to the end of its input. Each input is recorded in the audit log, secrets redacted. Then read the answer with read_output (wait_ms). A command that does not read its input for two seconds gets LIMIT_EXCEEDED; an ended session, or input after eof, gets OPERATION_FAILED.",
		mcpkit.Annotations{Title: "Send input to a session", Destructive: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"session_id":{"type":"string","minLength":1,"maxLength":64,"description":"The session, as run_command or list_sessions gave it."},`+
			`"text":{"type":"string","maxLength":65536,"description":"The text to write to its standard input, newline included."},`+
			`"eof":{"type":"boolean","description":"Close its standard input after the text. Default false."}`+
			`},"required":["session_id"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle(inputAction, s.o.Logger, s.sendInput)}
}

type inputArgs struct {
	SessionID string  `json:"session_id"`
	Text      *string `json:"text"`
	EOF       *bool   `json:"eof"`
}

func (s *Server) sendInput(_ context.Context, _ mcp.CallToolRequest, a inputArgs) result.OperationResult {
	start := time.Now()
	text, eof := "", false
	if a.Text != nil {
		text = *a.Text
	}
	if a.EOF != nil {
		eof = *a.EOF
	}
	if text == "" && !eof {
		return result.With(inputAction, result.InvalidRequest, "nothing to send: give text, eof: true, or both", nil, start)
	}
	info, err := s.run.SendInput(a.SessionID, text, eof)
	if err != nil {
		return result.Fail(inputAction, err, nil, start)
	}
	reason := "the input was written; read the answer with read_output"
	if eof {
		reason = "the input was written and closed; read the answer with read_output"
	}
	return result.With(inputAction, result.OK, reason, map[string]any{"session": info, "bytes": len(text), "eof": eof}, start)
}

func (s *Server) stopTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool(stopAction,
		"Stop a session (a command started by run_command with background: true): every process it started gets SIGTERM, and whatever is left two seconds later is killed. Answers once nothing of it runs, with its last output from since on and how it ended. Stopping a session that has already ended changes nothing.",
		mcpkit.Annotations{Title: "Stop a session", Destructive: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"session_id":{"type":"string","minLength":1,"maxLength":64,"description":"The session, as run_command or list_sessions gave it."},`+
			`"since":{"type":"integer","minimum":0,"description":"Return the output from this cursor on (the previous answer's detail.cursor). Default 0."}`+
			`},"required":["session_id"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle(stopAction, s.o.Logger, s.stopSession)}
}

type stopArgs struct {
	SessionID string `json:"session_id"`
	Since     *int64 `json:"since"`
}

func (s *Server) stopSession(ctx context.Context, _ mcp.CallToolRequest, a stopArgs) result.OperationResult {
	start := time.Now()
	var since int64
	if a.Since != nil {
		since = *a.Since
	}
	so, err := s.run.StopSession(ctx, a.SessionID, since)
	if err != nil {
		return result.Fail(stopAction, err, nil, start)
	}
	return result.With(stopAction, result.OK, sessionReason(so.Session, ""), SessionDetail{SessionOutput: so}, start)
}

func (s *Server) listTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool(listAction,
		"List the sessions (commands started by run_command with background: true): the running ones and the last ended ones, oldest first, each with its session_id, command, working directory, start time, state (starting, running, exited, stopped, expired, failed), exit status or the limit that ended it (idle, lifetime, memory, ...), the bytes of output it printed, and, when the operator set [terminal.sessions] publish_ports, ports: the TCP ports it listens on with the URL on the host's 127.0.0.1 that reaches each. At most [terminal.sessions] max run at once.",
		mcpkit.Annotations{Title: "List sessions", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)),
		Handler: mcpkit.Handle(listAction, s.o.Logger, s.listSessions)}
}

type listArgs struct{}

func (s *Server) listSessions(_ context.Context, _ mcp.CallToolRequest, _ listArgs) result.OperationResult {
	start := time.Now()
	all := s.run.Sessions()
	running := 0
	for _, i := range all {
		if i.Ended == nil {
			running++
		}
	}
	return result.With(listAction, result.OK, sessionsReason(running, len(all)),
		map[string]any{"sessions": all, "running": running, "max": s.o.SessionsMax}, start)
}

func sessionsReason(running, all int) string {
	if all == 0 {
		return "no session was started"
	}
	return strconv.Itoa(running) + " running, " + strconv.Itoa(all-running) + " ended"
}

// runAsTask is run_command called as an MCP task: the command starts as a
// session (the same pipeline, sandbox, bounds and audit as background:
// true) and the call follows it to its end; the task's cancellation
// (tasks/cancel, through taskRouter) stops the session with every process;
// the server's close ends it as it ends every session.
func (s *Server) runAsTask(ctx context.Context, req runner.Request, tty bool) result.OperationResult {
	start := time.Now()
	started := s.startSession(ctx, req, 0, tty)
	d, ok := started.Detail.(SessionDetail)
	if !ok || !started.OK {
		return started
	}
	tctx, done := s.tasks.taskContext(ctx)
	defer done()
	so, err := s.run.WaitSession(tctx, d.Session.ID, 0)
	if err != nil {
		return result.Fail(runAction, err, nil, start)
	}
	d.SessionOutput = so
	return result.With(runAction, result.OK, sessionReason(so.Session, ""), d, start)
}
