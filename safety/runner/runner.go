// Package runner is terminald's run pipeline: one call takes a command
// line and a working directory and returns what happened, holding every
// step in the one order that is safe.
//
// Run (run.go) judges the line with the command policy (safety/command),
// opens the working directory anchored in the jail (safety/jail), resolves
// the executable on the scrubbed PATH, has a person approve an ask
// decision (approve, approve.go: the one place; it asks through the
// request's AskFunc, approval.Asker.Ask bound to the tool call, and judges
// the line again after the answer; without an AskFunc it refuses with
// NEEDS_EXPLICIT_REQUEST), writes the intent record
// (safety/audit), runs the command in the sandbox (safety/sandbox) with a
// private HOME and TMPDIR (rundirs.go), redacts secrets from its output,
// shows its terminal control characters as visible escapes (unless
// raw_output) and then caps it (safety/redact), and writes the outcome
// record. At most max_concurrent commands run at once (slots.go): a call
// beyond it waits for a slot in a bounded queue, after the policy allowed
// it and the person approved it, and before its intent record.
// Nothing runs before the policy allowed it (or a person approved it),
// the working directory was opened inside the jail, the executable was
// found and the intent record was written. A refusal is recorded as an audit event and runs nothing.
//
// Evaluate (evaluate.go) is the pipeline's judging step alone, for
// explain_command: it writes nothing and runs nothing.
//
// The server only decodes arguments and translates an Outcome or an
// Evaluation into its answer; config.Terminal.Runtime turns the policy
// file's [terminal] section into the settings a Runner runs with.
package runner

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// DefaultAction names runs in the audit log when Options.Action is empty.
const DefaultAction = "run_command"

// Options configure a Runner. Root, StateDir and Audit are required.
type Options struct {
	// TerminalRuntime is what commands run with (config.Terminal.Runtime);
	// New applies its defaults and bounds (TerminalRuntime.Check).
	config.TerminalRuntime
	Root *jail.Root
	// Redact is the secret pattern set (the builtins when nil).
	Redact *redact.Set
	// ProxySocket is the filtering proxy's socket for sandbox.NetProxy.
	ProxySocket string
	Audit       *audit.Log
	Logger      *slog.Logger
	// Action names runs in the audit log: the intent and outcome records'
	// action and the refusal event (Action + ".refused"). DefaultAction
	// when empty.
	Action string
}

// QuarantineDirName is the directory beneath the state directory that
// receives what commands planted at protected paths (safety/protect): one
// directory per run, with a manifest; `terminald quarantine` lists and
// restores them.
const QuarantineDirName = "quarantine"

// primedDepth is how many clean pairs are kept with a prepared helper:
// twice as many as run at once (max_concurrent), at least two and at most
// the helpers the sandbox keeps prepared (sandbox.MaxPrepared): four by
// default. At least two: a paced call then takes the helper prepared two
// calls earlier, which has had two intervals to build its namespaces and
// view; with one, a call that came sooner than a helper's start (tens of
// milliseconds on a loaded machine) waited for it (issue 19). Twice
// max_concurrent: a burst of parallel calls beyond max_concurrent waits
// for slots, and the calls that get them later find helpers prepared too
// instead of starting theirs on the request path (bursts of 4 calls, A/B:
// p50 30-62 ms against 39-78 ms with two).
func primedDepth(maxConcurrent int) int {
	return min(max(2, 2*maxConcurrent), sandbox.MaxPrepared)
}

// Runner runs commands under fixed Options.
type Runner struct {
	o           Options
	pathEnv     string
	confinement string
	runsDir     string
	releaseRuns func()
	// spare is the pool of clean private HOME/TMPDIR pairs; primed holds
	// the clean pairs whose helper is prepared (or kept), taken first.
	spare, primed chan runDirs
	// running counts the runs (execute) holding a pair: prepare counts
	// them among the primed, as each is likely to come back with its
	// helper kept (giveBack).
	running atomic.Int32
	// preparing serialises prepare.
	preparing sync.Mutex
	// closed is set by Close: pairs used after it are removed, not pooled.
	closed atomic.Bool
	// after counts the recycling still to run after answers; Close waits.
	after sync.WaitGroup
	// slots bounds the commands running at once and the calls waiting
	// (max_concurrent, max_queued; slots.go).
	slots *slots
	// proxyRefused holds the proxy's refusals until their run ends, and
	// outside the allowlisted programs the view does not show
	// (refusals.go).
	proxyRefused proxyRefusals
	outside      map[string]string
	// sessions are the commands running in the background (session.go).
	sessions sessionSet
}

// New checks the options and describes the confinement in force. It
// refuses (with a *result.Error) a missing root, state directory or audit
// log, limits or PATH entries out of range, and a sandbox the kernel
// cannot provide. It claims this process's own directory for private
// HOME/TMPDIR pairs beneath StateDir/runs, removing those of servers that
// died without cleaning up.
func New(o Options) (*Runner, error) {
	if o.Root == nil || o.Audit == nil || o.StateDir == "" || !filepath.IsAbs(o.StateDir) {
		return nil, result.New(result.InvalidRequest, "terminald needs a jail root, an audit log and an absolute state directory")
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Redact == nil {
		s, err := redact.Compile(nil)
		if err != nil {
			return nil, err
		}
		o.Redact = s
	}
	if o.Protect == nil {
		o.Protect = protect.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Action == "" {
		o.Action = DefaultAction
	}
	conf, err := sandbox.Preflight(o.Landlock, o.Isolation, o.Net)
	if err != nil {
		return nil, err
	}
	r := &Runner{o: o, pathEnv: strings.Join(o.Path, string(os.PathListSeparator)), confinement: conf,
		spare: make(chan runDirs, 16), primed: make(chan runDirs, primedDepth(o.MaxConcurrent)),
		slots:   newSlots(o.MaxConcurrent, o.MaxQueued),
		outside: outsideView(o)}
	if r.runsDir, r.releaseRuns, err = sandbox.ClaimRunsDir(filepath.Join(o.StateDir, "runs"), r.reportLeftover); err != nil {
		return nil, err
	}
	return r, nil
}

// Options returns the options in force, defaults applied.
func (r *Runner) Options() Options { return r.o }

// Confinement describes the confinement commands get, as logged at startup.
func (r *Runner) Confinement() string { return r.confinement }

// Close ends every session (closeSessions), waits for the recycling of
// the last runs, removes the pooled
// private directories and this process's runs directory, and ends
// prepared sandbox helpers. Runs after Close still work but pool nothing.
func (r *Runner) Close() {
	r.closed.Store(true)
	r.closeSessions()
	r.after.Wait()
	sandbox.DiscardPrepared()
	for {
		select {
		case rd := <-r.spare:
			r.removeRunDir(rd.dir)
		case rd := <-r.primed:
			r.removeRunDir(rd.dir)
		default:
			if r.releaseRuns != nil {
				r.releaseRuns()
				r.releaseRuns = nil
			}
			// The protected paths' memory of the jail: its descriptors
			// and its watcher (a later run would walk the jail again).
			r.o.Protect.Close()
			return
		}
	}
}
