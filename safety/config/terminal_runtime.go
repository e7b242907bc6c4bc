package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// TerminalRuntime is [terminal] as terminald runs it: the command policy,
// the sandbox settings, the child environment and the limits, converted
// from the policy file's keys and checked. Terminal.Runtime builds it;
// safety/runner runs commands with it.
type TerminalRuntime struct {
	// Policy is the command policy (Terminal.CommandPolicy).
	Policy command.Policy
	// Path is the scrubbed PATH (command.DefaultPath when empty).
	Path []string
	// PassEnv are NAME=VALUE pairs the operator lets through ([terminal.env] pass).
	PassEnv []string
	// Timeout and MaxOutputBytes bound each command; zero means the default.
	Timeout        time.Duration
	MaxOutputBytes int
	// Landlock, Isolation and Net are the kernel confinement.
	Landlock  sandbox.Mode
	Isolation sandbox.Isolation
	Net       sandbox.NetMode
	// Limits bound each command (sandbox defaults for zero fields).
	Limits sandbox.Limits
	// Sandboxed is the "sandbox" profile: shells and interpreters may be
	// allowlisted, files in the writable trees may be executed, and the
	// kernel boundary, not the argument rules, is the guarantee.
	Sandboxed bool
	// Caches are the persistent tool caches (sandbox.Caches).
	Caches    sandbox.CacheSet
	ReadPaths []string
	// StateDir holds each run's private HOME and TMPDIR; it exists and
	// lies outside the jail.
	StateDir string
	// Protect is the jail's protected set ([terminal.sandbox] protect and
	// unprotect over protect.Defaults); nil is the built-in set.
	Protect *protect.Set
	// RawOutput is [terminal] raw_output: output keeps its terminal control
	// characters instead of showing them as visible escapes.
	RawOutput bool
	// MaxConcurrent and MaxQueued bound the commands running at once and
	// the calls waiting for one to end; zero means the default.
	MaxConcurrent, MaxQueued int
	// GitIdentity is the person's git identity commands get
	// ([terminal.sandbox] git_identity): user.name and user.email as
	// found, empty when git_identity is off or neither is set;
	// GitIdentitySkipped says why a key was left out.
	GitIdentity        map[string]string
	GitIdentitySkipped []string
	// GitIdentityFile is the identity file commands read as git's global
	// configuration (GIT_CONFIG_GLOBAL, also for git itself instead of
	// /dev/null); empty when there is none.
	GitIdentityFile string
	// SessionsMax bounds the live sessions; SessionIdle and
	// SessionLifetime end one ([terminal.sessions]); zero means the default.
	SessionsMax                  int
	SessionIdle, SessionLifetime time.Duration
	// PublishPorts is [terminal.sessions] publish_ports.
	PublishPorts bool
}

// Defaults for a TerminalRuntime's zero bounds, in the runtime's units.
const (
	DefaultTimeout = DefaultTimeoutSeconds * time.Second
	MaxTimeout     = TimeoutSecondsMax * time.Second
)

// Check applies the defaults to r's zero Timeout, MaxOutputBytes, Path,
// Net, MaxConcurrent, MaxQueued and session bounds, and refuses (INVALID_REQUEST) a
// timeout, output cap, concurrency or queue outside the [terminal.limits] bounds and a PATH entry that is not an absolute
// directory without ':'.
func (r *TerminalRuntime) Check() error {
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.Timeout < TimeoutSecondsMin*time.Second || r.Timeout > MaxTimeout {
		return result.New(result.InvalidRequest, fmt.Sprintf("terminal.limits.timeout_seconds must be between %d and %d",
			TimeoutSecondsMin, TimeoutSecondsMax))
	}
	if r.MaxOutputBytes == 0 {
		r.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if r.MaxOutputBytes < MaxOutputBytesMin || r.MaxOutputBytes > MaxOutputBytesMax {
		return result.New(result.InvalidRequest, fmt.Sprintf("terminal.limits.max_output_bytes must be between %d and %d",
			MaxOutputBytesMin, MaxOutputBytesMax))
	}
	if len(r.Path) == 0 {
		r.Path = command.DefaultPath
	}
	if err := checkPath(r.Path); err != nil {
		return err
	}
	if r.Net == "" {
		r.Net = sandbox.NetDeny
	}
	if r.MaxConcurrent == 0 {
		r.MaxConcurrent = DefaultMaxConcurrent
	}
	if r.MaxQueued == 0 {
		r.MaxQueued = DefaultMaxQueued
	}
	if r.SessionsMax == 0 {
		r.SessionsMax = DefaultSessionsMax
	}
	if r.SessionIdle == 0 {
		r.SessionIdle = DefaultSessionIdleMinutes * time.Minute
	}
	if r.SessionLifetime == 0 {
		r.SessionLifetime = DefaultSessionLifetimeMinutes * time.Minute
	}
	if r.SessionsMax < SessionsMaxMin || r.SessionsMax > SessionsMaxMax || r.SessionIdle < 0 || r.SessionLifetime < 0 {
		return result.New(result.InvalidRequest, fmt.Sprintf("terminal.sessions.max must be between %d and %d, and the session bounds positive",
			SessionsMaxMin, SessionsMaxMax))
	}
	if r.MaxConcurrent < MaxConcurrentMin || r.MaxConcurrent > MaxConcurrentMax {
		return result.New(result.InvalidRequest, fmt.Sprintf("terminal.limits.max_concurrent must be between %d and %d",
			MaxConcurrentMin, MaxConcurrentMax))
	}
	if r.MaxQueued < MaxQueuedMin || r.MaxQueued > MaxQueuedMax {
		return result.New(result.InvalidRequest, fmt.Sprintf("terminal.limits.max_queued must be between %d and %d",
			MaxQueuedMin, MaxQueuedMax))
	}
	return nil
}

// checkPath refuses a [terminal.env] path entry that is not an absolute
// directory without ':'.
func checkPath(path []string) error {
	for _, d := range path {
		if !filepath.IsAbs(d) || strings.ContainsAny(d, ":\x00") {
			return result.New(result.InvalidRequest, fmt.Sprintf("terminal.env.path entry %q must be an absolute directory without ':'", d))
		}
	}
	return nil
}

// startProblems returns the refusals of [terminal] that only terminald
// makes, besides an invalid command policy, and that need neither the
// kernel nor the filesystem (Load's Validate makes the others, for every
// server): an empty allowlist, a [terminal.env] pass entry that is not a
// plain variable name or names a variable terminald sets, and a bad
// [terminal.env] path entry. check reports each; terminald refuses to
// start on the first.
func (t Terminal) startProblems() []string {
	var out []string
	if len(t.Allowlist.Commands) == 0 {
		out = append(out, "[terminal.allowlist] commands is empty: nothing could run; list the programs terminald may run")
	}
	for _, name := range t.Env.Pass {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			out = append(out, fmt.Sprintf("[terminal.env] pass entry %q is not a variable name", name))
			continue
		}
		switch name {
		case "PATH", "HOME", "TMPDIR":
			out = append(out, fmt.Sprintf("[terminal.env] pass must not list %s: terminald sets it", name))
		case "GIT_CONFIG_GLOBAL":
			if t.Sandbox.GitIdentity {
				out = append(out, "[terminal.env] pass must not list GIT_CONFIG_GLOBAL with [terminal.sandbox] git_identity = true: "+
					"terminald points it at the identity file")
			}
		}
	}
	if err := checkPath(t.Env.Path); err != nil {
		out = append(out, result.Reason(err))
	}
	return out
}

// Runtime checks [terminal] the way terminald does before it starts and
// converts it into what commands run with. jailRoot is the opened jail's
// path; stateBase returns the default state directory (audit.DefaultDir),
// used when [terminal.state] dir is unset. Every refusal is a Fatal, in
// this order: a sandbox the kernel cannot provide (landlock, isolation and
// network mode, probed), an invalid command policy, the startProblems,
// and a state directory that cannot be found, lies inside the jail or
// cannot be created, or whose caches cannot be. It creates the state
// directory and the caches.
func (t Terminal) Runtime(jailRoot string, stateBase func() (string, error)) (TerminalRuntime, error) {
	s := t.Sandbox
	r := TerminalRuntime{Landlock: sandbox.Mode(s.EffectiveLandlock()), Isolation: sandbox.Isolation(s.EffectiveIsolation()),
		Net: sandbox.NetMode(s.EffectiveNetwork())}
	if err := t.Preflight(); err != nil {
		return r, err
	}
	cp := t.CommandPolicy()
	if err := cp.Validate(); err != nil {
		return r, Fatalf("%s", result.Reason(err))
	}
	if p := t.startProblems(); len(p) > 0 {
		return r, Fatalf("%s", p[0])
	}
	lim := t.Limits.WithDefaults()
	r.Policy, r.Path, r.PassEnv, r.Sandboxed, r.ReadPaths = cp, t.Env.Path, passEnv(t.Env.Pass), t.Sandboxed(), s.ReadPaths
	r.Timeout, r.MaxOutputBytes = time.Duration(lim.TimeoutSeconds)*time.Second, lim.MaxOutputBytes
	r.MaxConcurrent, r.MaxQueued, r.RawOutput = lim.MaxConcurrent, lim.MaxQueued, t.RawOutput
	ses := t.Sessions.WithDefaults()
	r.SessionsMax = ses.Max
	r.SessionIdle = time.Duration(ses.IdleMinutes) * time.Minute
	r.SessionLifetime = time.Duration(ses.MaxLifetimeMinutes) * time.Minute
	r.PublishPorts = ses.PublishPorts
	r.Limits = sandbox.Limits{MemoryMB: lim.MemoryMB, MaxProcesses: lim.MaxProcesses, CPUSeconds: lim.CPUSeconds,
		MaxFileMB: lim.MaxFileMB, MaxOpenFiles: lim.MaxOpenFiles, DiskMB: lim.DiskMB}
	var err error
	if r.StateDir, err = t.stateDir(jailRoot, stateBase); err != nil {
		return r, err
	}
	var un []protect.Unprotect
	for _, u := range s.Unprotect {
		un = append(un, protect.Unprotect{Pattern: u.Path, Reason: u.Reason})
	}
	if r.Protect, err = protect.New(s.Protect, un); err != nil {
		return r, Fatalf("[terminal.sandbox] protect/unprotect: %s", result.Reason(err))
	}
	if r.Caches, err = sandbox.Caches(r.StateDir, jailRoot, s.Caches, s.ShareCaches); err != nil {
		return r, Fatalf("[terminal.sandbox] caches: %s", result.Reason(err))
	}
	if s.GitIdentity {
		if err := r.gitIdentity(); err != nil {
			return r, err
		}
	}
	if err := r.Check(); err != nil {
		return r, Fatalf("%s", result.Reason(err))
	}
	return r, nil
}

// gitIdentity reads the person's user.name and user.email (GitIdentity),
// writes them to GitIdentityFile in the state directory and has commands
// read it as their global git configuration: GIT_CONFIG_GLOBAL names it
// and it joins the read paths (read-only in the view), so git commit
// records the person and a repository's own configuration still wins.
func (r *TerminalRuntime) gitIdentity() error {
	values, skipped := GitIdentity()
	path, err := writeGitIdentity(r.StateDir, values)
	if err != nil {
		return Fatalf("[terminal.sandbox] git_identity: the identity file cannot be written in the state directory %s: %s",
			r.StateDir, result.Reason(err))
	}
	r.GitIdentity, r.GitIdentitySkipped = values, skipped
	if path == "" {
		return nil
	}
	if len(r.ReadPaths) == 0 {
		r.ReadPaths = slices.Clone(sandbox.DefaultReadPaths)
	} else {
		r.ReadPaths = slices.Clone(r.ReadPaths)
	}
	r.ReadPaths = append(r.ReadPaths, path)
	r.GitIdentityFile = path
	r.PassEnv = append(r.PassEnv, "GIT_CONFIG_GLOBAL="+path)
	return nil
}

// Preflight asks the kernel for the confinement [terminal.sandbox] wants
// (sandbox.Preflight: a usable Landlock when landlock = "required", a
// helper started once in new namespaces for isolation = "namespaces"). A
// refusal is a Fatal naming the settings. Runtime calls it first, and
// terminald's check reports it.
func (t Terminal) Preflight() error {
	s := t.Sandbox
	mode, iso := sandbox.Mode(s.EffectiveLandlock()), sandbox.Isolation(s.EffectiveIsolation())
	if _, err := sandbox.Preflight(mode, iso, sandbox.NetMode(s.EffectiveNetwork())); err != nil {
		return Fatalf("[terminal.sandbox] landlock = %q, isolation = %q: %s", mode, iso, result.Reason(err))
	}
	return nil
}

// passEnv returns the NAME=VALUE pairs of the server's environment that
// [terminal.env] pass lets through; unset names are left out.
func passEnv(names []string) []string {
	var pass []string
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			pass = append(pass, name+"="+v)
		}
	}
	return pass
}

// stateDir returns [terminal.state] dir, or "terminald" beneath the
// default state directory, once it is known to lie outside the jail and
// exists.
func (t Terminal) stateDir(jailRoot string, stateBase func() (string, error)) (string, error) {
	dir := t.State.Dir
	if dir == "" {
		base, err := stateBase()
		if err != nil {
			return "", Fatalf("no [terminal.state] dir and %s", result.Reason(err))
		}
		dir = filepath.Join(base, "terminald")
	}
	if err := CheckOutside("[terminal.state] dir", dir, []string{jailRoot}); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", Fatalf("[terminal.state] dir %s cannot be created: %s", dir, result.Reason(err))
	}
	return dir, nil
}

// LeftoverRuns lists the run directories in terminald's state directory
// ([terminal.state] dir, or "terminald" beneath stateBase's) that belong
// to no running server, with their size (sandbox.LeftoverRuns): what a
// server could not remove at its start, or what one that died since left.
// It creates and removes nothing; terminald's check reports each.
func (t Terminal) LeftoverRuns(stateBase func() (string, error)) []sandbox.Leftover {
	dir := t.State.Dir
	if dir == "" {
		base, err := stateBase()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "terminald")
	}
	return sandbox.LeftoverRuns(filepath.Join(dir, "runs"))
}
