package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// runTool is run_command: one command line, run in the jail under the
// policy and the kernel boundary.
func (s *Server) runTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("run_command",
		"Run one command line inside the jail directory, without a shell, and return its exit code, stdout and stderr. The line is split like a POSIX shell would split a simple command (quotes group words; inside quotes ; | & > $ are literal text), but shell operators, redirections, variables, globs and ~ are refused rather than interpreted. Only allowlisted programs run, resolved by name on the server's PATH; argument rules refuse dangerous options (git -c, find -exec, tar --to-command, ...). The process runs with a private HOME and TMPDIR, no stdin, a fixed environment, resource limits, a timeout that kills every process it started, and kernel confinement (on Linux: its own namespaces showing only the jail and system directories, Landlock, seccomp, no capabilities, and only its own loopback unless the operator allowed the network or a proxy). Secrets in the output are redacted, then each stream is capped. A non-zero exit status is still ok:true: the command ran.",
		mcpkit.Annotations{Title: "Run a command in the jail", Destructive: true, OpenWorld: false},
		json.RawMessage(`{"type":"object","properties":{`+
			`"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The command line, e.g. \"ls -la src\" or \"git log -n 5\". No shell syntax."},`+
			`"cwd":{"type":"string","maxLength":4096,"description":"Working directory: relative to the jail root, or absolute inside it. Default: the jail root. Symbolic links and .. that leave the jail are refused."}`+
			`},"required":["command"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle("run_command", s.o.Logger, s.runCommand)}
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
	// Limit names the limit that stopped the command: memory, processes,
	// cpu, file_size, open_files or timeout.
	Limit string `json:"limit,omitempty"`
}

// redactArgv returns argv with secrets in any word replaced by markers, for
// the audit log.
func (s *Server) redactArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		b, _ := s.o.Redact.Redact([]byte(a))
		out[i] = string(b)
	}
	return out
}

// cwd resolves the requested working directory anchored in the jail and
// returns its absolute path and the open directory (kept open during the
// run). Escapes, symbolic links and mounts are PATH_ESCAPE.
func (s *Server) cwd(p *string) (string, *jail.Dir, error) {
	rel := "."
	if p != nil && *p != "" {
		var err error
		if rel, err = s.o.Root.Clean(*p); err != nil {
			return "", nil, err
		}
	}
	d, err := s.o.Root.OpenDir(rel)
	if err != nil {
		code, _ := result.Classify(err)
		if code == result.NotFound {
			return "", nil, result.Wrap(result.NotFound, "the working directory does not exist in the jail (or is not a directory)", err)
		}
		return "", nil, err
	}
	if rel == "." {
		return s.o.Root.Path(), d, nil
	}
	return filepath.Join(s.o.Root.Path(), filepath.FromSlash(rel)), d, nil
}

func (s *Server) refused(action string, line string, err error, start time.Time) result.OperationResult {
	code, _ := result.Classify(err)
	// A refusal changes nothing, so it is recorded as an event; a failure
	// to record it does not change the answer.
	_ = s.o.Audit.Event(action+".refused", map[string]any{"command": s.redactLine(line), "code": code})
	return result.Fail(action, err, nil, start)
}

func (s *Server) redactLine(line string) string {
	b, _ := s.o.Redact.Redact([]byte(line))
	if len(b) > 1024 {
		b = append(b[:1024], "..."...)
	}
	return string(b)
}

func (s *Server) runCommand(ctx context.Context, _ mcp.CallToolRequest, a runArgs) result.OperationResult {
	const action = "run_command"
	start := time.Now()
	d, err := s.o.Policy.Check(a.Command)
	if err != nil {
		return s.refused(action, a.Command, err, start)
	}
	dir, dh, err := s.cwd(a.Cwd)
	if err != nil {
		return s.refused(action, a.Command, err, start)
	}
	defer dh.Close()
	exe, err := command.Resolve(d.Argv[0], s.o.Path)
	if err != nil {
		return s.refused(action, a.Command, err, start)
	}

	argv := s.redactArgv(d.Argv)
	intent, err := s.o.Audit.Intent(action, map[string]any{"argv": argv, "cwd": dir, "executable": exe, "rule": d.Rule})
	if err != nil {
		return result.Fail(action, err, nil, start)
	}

	// A private HOME and TMPDIR for this run, outside the jail, used by no
	// concurrent run and emptied before reuse: nothing one run leaves there
	// reaches the next.
	var outc sandbox.Outcome
	stdout := s.o.Redact.NewCappedWriter(s.o.MaxOutputBytes)
	stderr := s.o.Redact.NewCappedWriter(s.o.MaxOutputBytes)
	rd, err := s.takeRunDirs()
	if err == nil {
		spec := s.spec(rd)
		spec.Path, spec.Argv, spec.Dir = exe, d.Argv, dir
		spec.Env = sandbox.MergeEnv(append(sandbox.ProgramEnv(d.Name), s.o.Caches.Env...), s.o.PassEnv)
		spec.Stdout, spec.Stderr = stdout, stderr
		outc, err = sandbox.Run(ctx, spec)
	}
	// The private directories are emptied, and the next command's helper
	// prepared, once this answer is on its way: doing it now would compete
	// with the outcome record's fsync and the reply. A command that comes
	// sooner takes fresh directories.
	s.after.Add(1)
	time.AfterFunc(prepareDelay, func() {
		defer s.after.Done()
		if s.closed.Load() {
			_ = os.RemoveAll(rd.dir)
			return
		}
		s.recycle(rd)
		s.prepare()
	})
	stdout.Close()
	stderr.Close()
	ran := outc.Duration > 0 // zero only when the child never started
	truncated := stdout.Truncated() || stderr.Truncated()

	code := result.OK
	reason := ""
	switch {
	case err != nil:
		code, reason = result.Classify(err)
	case truncated:
		code = result.OutputTruncated
	}
	fields := map[string]any{
		"exit_code": outc.ExitCode, "duration_ms": outc.Duration.Milliseconds(),
		"stdout_bytes": stdout.TotalIn(), "stderr_bytes": stderr.TotalIn(), "truncated": truncated,
		"confinement": outc.Confinement, "redactions": stdout.Redactions() + stderr.Redactions(),
	}
	if outc.Signal != "" {
		fields["signal"] = outc.Signal
	}
	if outc.Limit != "" {
		fields["limit"] = outc.Limit
	}
	if aerr := s.o.Audit.Outcome(intent, action, code, fields); aerr != nil {
		s.o.Logger.Error("audit outcome record failed", "intent", intent)
	}
	if !ran {
		return result.With(action, code, reason, nil, start)
	}
	detail := RunDetail{Argv: d.Argv, ExitCode: outc.ExitCode, Signal: outc.Signal,
		Stdout: string(stdout.Bytes()), Stderr: string(stderr.Bytes()), Truncated: truncated, Confinement: outc.Confinement,
		Limit: outc.Limit}
	switch code {
	case result.OK:
		reason = fmt.Sprintf("the command ran and exited with status %d", outc.ExitCode)
		if outc.Signal != "" {
			reason = "the command ran and was ended by " + outc.Signal
		}
	case result.OutputTruncated:
		reason = fmt.Sprintf("the command ran and exited with status %d; output was longer than %d bytes per stream "+
			"(stdout %d, stderr %d bytes) and was cut after redaction: narrow the command (head, grep, -n) to see the rest",
			outc.ExitCode, s.o.MaxOutputBytes, stdout.TotalIn(), stderr.TotalIn())
	}
	return result.With(action, code, reason, detail, start)
}
