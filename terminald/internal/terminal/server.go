// Package terminal is terminald's MCP surface: run_command and
// explain_command, wired onto the safety core.
//
// It decides nothing about safety itself. Parsing and the allow/deny
// decision are safety/command's, path anchoring is safety/jail's, process
// confinement and the git hardening environment are safety/sandbox's,
// secret redaction and the output cap are safety/redact's, the intent and
// outcome records are safety/audit's. This package only orders those steps,
// and it refuses to reorder them: nothing runs before the policy allowed
// it, the working directory was opened inside the jail, the executable was
// found on the scrubbed PATH and the intent record was written.
package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// Defaults for [terminal.limits] and [terminal.env].
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 64 << 10
	// MaxTimeout and MaxOutputLimit bound what a policy may ask for.
	MaxTimeout     = time.Hour
	MaxOutputLimit = 16 << 20
)

// DefaultPath is the scrubbed PATH when [terminal.env] path is empty.
var DefaultPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// PathRadar is the hook through which explain_command shows the risk
// radar's view of the path arguments of a command. *risk.Engine satisfies
// it; nil leaves the view out.
type PathRadar interface {
	ClassifyPath(root, rel string, isDir bool) (risk.Descriptor, error)
}

// Options configure a Server. Root, Policy, StateDir and Audit are required.
type Options struct {
	Root   *jail.Root
	Policy command.Policy
	// Path is the scrubbed PATH (DefaultPath when empty).
	Path []string
	// PassEnv are NAME=VALUE pairs the operator lets through ([terminal.env] pass).
	PassEnv []string
	// Redact is the secret pattern set (the builtins when nil).
	Redact         *redact.Set
	Timeout        time.Duration
	MaxOutputBytes int
	Landlock       sandbox.Mode
	// Isolation is the wall around each command (namespaces when empty).
	Isolation sandbox.Isolation
	// Net is the network mode; ProxySocket is the filtering proxy's socket
	// for sandbox.NetProxy.
	Net         sandbox.NetMode
	ProxySocket string
	// Limits bound each command (sandbox defaults for zero fields).
	Limits sandbox.Limits
	// Sandboxed is the "sandbox" profile: shells and interpreters may be
	// allowlisted, files in the writable trees may be executed, and the
	// kernel boundary, not the argument rules, is the guarantee.
	Sandboxed bool
	// Caches are the persistent tool caches (sandbox.Caches).
	Caches    sandbox.CacheSet
	ReadPaths []string
	// StateDir holds each run's private HOME and TMPDIR; it must exist and
	// lie outside the jail (main checks that with config.CheckOutside).
	StateDir string
	Audit    *audit.Log
	Radar    PathRadar
	Logger   *slog.Logger
	Version  string
}

// Server holds terminald's fixed configuration.
type Server struct {
	o           Options
	pathEnv     string
	confinement string
	runsDir     string
	releaseRuns func()
	// spare is the pool of clean private HOME/TMPDIR pairs.
	spare chan runDirs
	// closed is set by Close: pairs used after it are removed, not pooled.
	closed atomic.Bool
	// after counts the recycling still to run after answers; Close waits.
	after sync.WaitGroup
}

// runDirs is one run's private directory with its HOME and TMPDIR.
type runDirs struct{ dir, home, tmp string }

func (s *Server) makeRunDirs() (runDirs, error) {
	d := filepath.Join(s.runsDir, ids.New("r"))
	rd := runDirs{d, filepath.Join(d, "home"), filepath.Join(d, "tmp")}
	for _, p := range []string{rd.dir, rd.home, rd.tmp} {
		if err := os.Mkdir(p, 0o700); err != nil {
			_ = os.RemoveAll(d)
			return runDirs{}, result.Wrap(result.InternalError, "the private HOME and TMPDIR for the command could not be created", err)
		}
	}
	return rd, nil
}

// takeRunDirs returns a clean pair from the pool, or a new one.
func (s *Server) takeRunDirs() (runDirs, error) {
	select {
	case rd := <-s.spare:
		return rd, nil
	default:
		return s.makeRunDirs()
	}
}

// emptyDir reports whether dir exists as a directory with no entries.
func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return err != nil && len(names) == 0
}

// recycle returns a used pair to the pool once it is empty again: whatever
// a run left in its HOME or TMPDIR is removed, so nothing reaches the next
// run. Pairs are reused rather than made per run because creating and
// removing directories adds to every journal commit, which the audit
// log's fsync waits for.
func (s *Server) recycle(rd runDirs) {
	if rd.dir == "" {
		return
	}
	for _, d := range []string{rd.home, rd.tmp} {
		if !emptyDir(d) {
			if os.RemoveAll(d) != nil || os.Mkdir(d, 0o700) != nil {
				_ = os.RemoveAll(rd.dir)
				return
			}
		}
	}
	select {
	case s.spare <- rd:
	default:
		_ = os.RemoveAll(rd.dir)
	}
}

// Prewarm makes a private directory pair and prepares a helper for it, so
// that the first command after start-up finds its sandbox ready too.
func (s *Server) Prewarm() {
	rd, err := s.makeRunDirs()
	if err != nil {
		return
	}
	select {
	case s.spare <- rd:
		s.prepare()
	default:
		_ = os.RemoveAll(rd.dir)
	}
}

// prepareDelay is how long after a command the next one's helper is
// prepared.
const prepareDelay = 5 * time.Millisecond

// prepare has the sandbox start the next command's helper now, for the
// private directories the next run will most likely take, so that its
// namespaces and view are ready when the command arrives.
func (s *Server) prepare() {
	select {
	case rd := <-s.spare:
		sandbox.Prepare(s.spec(rd))
		select {
		case s.spare <- rd:
		default:
			_ = os.RemoveAll(rd.dir)
		}
	default:
	}
}

// spec is the sandbox.Spec of a run in rd, without its command.
func (s *Server) spec(rd runDirs) sandbox.Spec {
	return sandbox.Spec{JailRoot: s.o.Root.Path(), TempDir: rd.tmp, HomeDir: rd.home,
		WritePaths: s.o.Caches.Paths, ReadPaths: s.o.ReadPaths, ExecWritable: s.o.Sandboxed,
		PathEnv: s.pathEnv, Net: s.o.Net, ProxySocket: s.o.ProxySocket, Landlock: s.o.Landlock,
		Isolation: s.o.Isolation, Limits: s.o.Limits, Timeout: s.o.Timeout}
}

// Close removes the pooled private directories and ends prepared helpers.
func (s *Server) Close() {
	s.closed.Store(true)
	s.after.Wait()
	sandbox.DiscardPrepared()
	for {
		select {
		case rd := <-s.spare:
			_ = os.RemoveAll(rd.dir)
		default:
			if s.releaseRuns != nil {
				s.releaseRuns()
				s.releaseRuns = nil
			}
			return
		}
	}
}

// New checks the options and describes the confinement in force. It
// refuses (with a *result.Error) a missing root, state directory or audit
// log, limits out of range, and a Landlock mode the kernel cannot honour.
func New(o Options) (*Server, error) {
	if o.Root == nil || o.Audit == nil || o.StateDir == "" || !filepath.IsAbs(o.StateDir) {
		return nil, result.New(result.InvalidRequest, "terminald needs a jail root, an audit log and an absolute state directory")
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < time.Second || o.Timeout > MaxTimeout {
		return nil, result.New(result.InvalidRequest, "terminal.limits.timeout_seconds must be between 1 and 3600")
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.MaxOutputBytes < 1 || o.MaxOutputBytes > MaxOutputLimit {
		return nil, result.New(result.InvalidRequest, fmt.Sprintf("terminal.limits.max_output_bytes must be between 1 and %d", MaxOutputLimit))
	}
	if len(o.Path) == 0 {
		o.Path = DefaultPath
	}
	for _, d := range o.Path {
		if !filepath.IsAbs(d) || strings.ContainsAny(d, ":\x00") {
			return nil, result.New(result.InvalidRequest, fmt.Sprintf("terminal.env.path entry %q must be an absolute directory without ':'", d))
		}
	}
	if o.Redact == nil {
		s, err := redact.Compile(nil)
		if err != nil {
			return nil, err
		}
		o.Redact = s
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Net == "" {
		o.Net = sandbox.NetDeny
	}
	conf, err := sandbox.Preflight(o.Landlock, o.Isolation, o.Net)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, pathEnv: strings.Join(o.Path, string(os.PathListSeparator)), confinement: conf,
		spare: make(chan runDirs, 16)}
	// This process's own runs directory; those of servers that died
	// without cleaning up (SIGKILL) are removed here.
	if s.runsDir, s.releaseRuns, err = sandbox.ClaimRunsDir(filepath.Join(o.StateDir, "runs")); err != nil {
		return nil, err
	}
	return s, nil
}

// Confinement describes the confinement commands get, as logged at startup.
func (s *Server) Confinement() string { return s.confinement }

// Instructions is sent to clients at initialize.
const Instructions = "terminald runs single commands without a shell inside one operator-fixed directory (the jail), " +
	"under a deny-first allowlist and kernel confinement. Call explain_command first when unsure whether a command is allowed; " +
	"run_command returns stdout, stderr and the exit code, with secrets redacted and output capped. " +
	"There is no shell: pipes, redirections, ;, &&, $VAR and globs are refused; quote arguments that contain such characters."

// MCP builds the MCP server with exactly two tools.
func (s *Server) MCP() *server.MCPServer {
	m := mcpkit.NewServer("terminald", s.o.Version, Instructions)
	m.AddTools(s.Tools()...)
	if eng, ok := s.o.Radar.(*risk.Engine); ok && eng != nil {
		mcpkit.RegisterFileContext(m, []*jail.Root{s.o.Root}, eng, s.o.Logger)
	}
	return m
}

// Tools returns the two tools with their handlers.
func (s *Server) Tools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcpkit.NewTool("run_command",
			"Run one command line inside the jail directory, without a shell, and return its exit code, stdout and stderr. The line is split like a POSIX shell would split a simple command (quotes group words; inside quotes ; | & > $ are literal text), but shell operators, redirections, variables, globs and ~ are refused rather than interpreted. Only allowlisted programs run, resolved by name on the server's PATH; argument rules refuse dangerous options (git -c, find -exec, tar --to-command, ...). The process runs with a private HOME and TMPDIR, no stdin, a fixed environment, resource limits, a timeout that kills every process it started, and kernel confinement (on Linux: its own namespaces showing only the jail and system directories, Landlock, seccomp, no capabilities, and only its own loopback unless the operator allowed the network or a proxy). Secrets in the output are redacted, then each stream is capped. A non-zero exit status is still ok:true: the command ran.",
			mcpkit.Annotations{Title: "Run a command in the jail", Destructive: true, OpenWorld: false},
			json.RawMessage(`{"type":"object","properties":{`+
				`"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The command line, e.g. \"ls -la src\" or \"git log -n 5\". No shell syntax."},`+
				`"cwd":{"type":"string","maxLength":4096,"description":"Working directory: relative to the jail root, or absolute inside it. Default: the jail root. Symbolic links and .. that leave the jail are refused."}`+
				`},"required":["command"],"additionalProperties":false}`)),
			Handler: mcpkit.Handle("run_command", s.o.Logger, s.runCommand)},
		{Tool: mcpkit.NewTool("explain_command",
			"Explain how run_command would judge a command line, without running anything: the decision (allow or deny), the rule that decided and its reason, the argv after parsing, the executable it would resolve to, the confinement, limits and working directory it would run with, and the risk radar's view of arguments that name paths in the jail. Use it to find out why a command is refused and what to run instead.",
			mcpkit.Annotations{Title: "Explain a command decision", ReadOnly: true, Idempotent: true},
			json.RawMessage(`{"type":"object","properties":{`+
				`"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The command line to judge."}`+
				`},"required":["command"],"additionalProperties":false}`)),
			Handler: mcpkit.Handle("explain_command", s.o.Logger, s.explainCommand)},
	}
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

type explainArgs struct {
	Command string `json:"command"`
}

// PathView is the radar's view of one argument that names a path.
type PathView struct {
	Arg        string           `json:"arg"`
	Path       string           `json:"path"`
	Exists     bool             `json:"exists"`
	Descriptor *risk.Descriptor `json:"descriptor,omitempty"`
	Refused    string           `json:"refused,omitempty"`
}

// ExplainDetail is explain_command's detail.
type ExplainDetail struct {
	Decision       string     `json:"decision"` // allow | deny
	Code           string     `json:"code"`
	Rule           string     `json:"rule"`
	Reason         string     `json:"reason"`
	Name           string     `json:"name,omitempty"`
	Argv           []string   `json:"argv"`
	Executable     string     `json:"executable,omitempty"`
	Cwd            string     `json:"cwd"`
	Confinement    string     `json:"confinement"`
	TimeoutSeconds int        `json:"timeout_seconds"`
	MaxOutputBytes int        `json:"max_output_bytes"`
	Env            []string   `json:"env"`
	Paths          []PathView `json:"paths"`
	// Guarantee says what keeps the machine safe for this command.
	Guarantee string `json:"guarantee"`
}

// What explain_command says keeps the machine safe, per profile.
const (
	guaranteeAllowlist = "profile allowlist: only allowlisted programs run, never a shell, wrapper or interpreter; " +
		"argument rules refuse their dangerous options; the kernel confinement is a second wall"
	guaranteeSandbox = "profile sandbox: the kernel boundary is the guarantee (namespaces, Landlock, seccomp, no capabilities, " +
		"resource limits): whatever the command runs stays inside the jail and its view; the allowlist and argument rules " +
		"only decide what may be asked for"
)

// maxPathViews bounds the radar views in one explanation.
const maxPathViews = 32

func (s *Server) explainCommand(_ context.Context, _ mcp.CallToolRequest, a explainArgs) result.OperationResult {
	const action = "explain_command"
	start := time.Now()
	d, err := s.o.Policy.Check(a.Command)
	x := ExplainDetail{Decision: "deny", Code: string(d.Code), Rule: d.Rule, Reason: d.Reason, Name: d.Name,
		Argv: d.Argv, Cwd: s.o.Root.Path(), Confinement: s.confinement,
		TimeoutSeconds: int(s.o.Timeout / time.Second), MaxOutputBytes: s.o.MaxOutputBytes, Paths: []PathView{},
		Guarantee: guaranteeAllowlist}
	if s.o.Sandboxed {
		x.Guarantee = guaranteeSandbox
	}
	if x.Argv == nil {
		x.Argv = []string{}
	}
	env := []string{"PATH", "HOME", "LANG", "TMPDIR"}
	for _, kv := range sandbox.MergeEnv(append(sandbox.ProgramEnv(d.Name), s.o.Caches.Env...), s.o.PassEnv) {
		name, _, _ := strings.Cut(kv, "=")
		env = append(env, name)
	}
	x.Env = env
	if err == nil {
		x.Decision = "allow"
		if exe, rerr := command.Resolve(d.Argv[0], s.o.Path); rerr == nil {
			x.Executable = exe
		} else {
			code, reason := result.Classify(rerr)
			x.Decision, x.Code, x.Reason = "deny", string(code), reason
		}
	}
	if len(d.Argv) > 1 {
		x.Paths = s.pathViews(d.Argv[1:])
	}
	summary := fmt.Sprintf("%s would be refused (%s): %s", quoteCmd(a.Command), x.Code, x.Reason)
	if x.Decision == "allow" {
		summary = fmt.Sprintf("%s would run %s in the jail (%s); nothing was run", quoteCmd(a.Command), x.Executable, x.Rule)
	}
	return result.Success(action, summary, x, start)
}

func quoteCmd(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return "`" + s + "`"
}

// pathViews asks the radar about arguments that look like paths: words
// that are not options and either exist in the jail or contain a '/' or '.'.
// Nothing is opened but anchored lstat calls and the radar's rule lookup.
func (s *Server) pathViews(args []string) []PathView {
	views := []PathView{}
	for _, w := range args {
		if len(views) >= maxPathViews {
			break
		}
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		rel, err := s.o.Root.Clean(w)
		if err != nil {
			if strings.ContainsAny(w, "/.") {
				_, reason := result.Classify(err)
				views = append(views, PathView{Arg: w, Refused: reason})
			}
			continue
		}
		info, lerr := s.o.Root.Lstat(rel)
		exists := lerr == nil
		if !exists && !strings.ContainsAny(w, "/.") {
			continue
		}
		v := PathView{Arg: w, Path: rel, Exists: exists}
		if s.o.Radar != nil && rel != "." {
			if desc, err := s.o.Radar.ClassifyPath(s.o.Root.Path(), rel, exists && info.IsDir()); err == nil {
				v.Descriptor = &desc
			}
		}
		views = append(views, v)
	}
	return views
}

// OutsideReadPaths returns, for each allowlisted name that resolves on
// path to a program outside readPaths, the pair (name, program): such a
// command cannot be executed in the sandbox, and check and the startup log
// say so.
func OutsideReadPaths(allow, path, readPaths []string) [][2]string {
	if len(path) == 0 {
		path = DefaultPath
	}
	var out [][2]string
	for _, name := range allow {
		exe, err := command.Resolve(name, path)
		if err == nil && !sandbox.Covered(exe, readPaths) {
			out = append(out, [2]string{name, exe})
		}
	}
	return out
}
