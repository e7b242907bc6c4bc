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
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/command"
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
	// Path is the scrubbed PATH (command.DefaultPath when empty).
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
		o.Path = command.DefaultPath
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

// Tools returns the two tools with their handlers, one constructor each
// (run.go, explain.go).
func (s *Server) Tools() []server.ServerTool {
	return []server.ServerTool{s.runTool(), s.explainTool()}
}
