// Package config loads Bastion's policy.toml: strictly (an unknown key is an
// error, never ignored), with relative paths resolved against the policy
// file's own directory and environment overrides applied on top.
//
// It refuses to guess: there is no default policy file, no implicit
// ./policy.toml, no fallback root. A policy that cannot be read or does not
// validate is a Fatal error, which a server prints as one "fatal:" line
// before exiting non-zero.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/pelletier/go-toml/v2"
)

// MaxPolicyBytes bounds the size of a policy file.
const MaxPolicyBytes = 4 << 20

// Environment variables that name the policy file or override its keys.
const (
	EnvPolicyFile    = "BASTION_POLICY_FILE"
	EnvAuditLog      = "BASTION_AUDIT_LOG"
	EnvAuditFailMode = "BASTION_AUDIT_FAIL_MODE"
	EnvSweepRoots    = "BASTION_SWEEP_ROOTS" // list separated by the OS path-list separator
	EnvJailRoot      = "BASTION_JAIL_ROOT"
	EnvWorkspaceRoot = "BASTION_WORKSPACE_ROOT"
	EnvJournal       = "BASTION_JOURNAL"
)

// Policy is the whole policy file. Each server reads its own section plus
// the shared keys.
type Policy struct {
	// AuditLog is the audit log file; empty means the default state
	// directory ($XDG_STATE_HOME/bastion or ~/.local/state/bastion).
	AuditLog string `toml:"audit_log" json:"audit_log"`
	// AuditFailMode is "closed" (default: no intent record, no action) or "open".
	AuditFailMode string    `toml:"audit_fail_mode" json:"audit_fail_mode"`
	Audit         Audit     `toml:"audit" json:"audit"`
	Redaction     Redaction `toml:"redaction" json:"redaction"`
	Sweep         Sweep     `toml:"sweep" json:"sweep"`
	Terminal      Terminal  `toml:"terminal" json:"terminal"`
	Organizer     Organizer `toml:"organizer" json:"organizer"`
	Radar         Radar     `toml:"radar" json:"radar"`
	Approval      Approval  `toml:"approval" json:"approval"`
	Telemetry     Telemetry `toml:"telemetry" json:"telemetry"`

	// File is the policy file's absolute path ("" when none was given).
	File string `toml:"-" json:"-"`

	// keys is where each key stands in File, so a problem found after
	// decoding names its line; fromEnv names the environment variable
	// that overrode a key.
	keys    keyIndex          `toml:"-" json:"-"`
	fromEnv map[string]string `toml:"-" json:"-"`
	// leaves are the relative paths that lead out of File's folder.
	leaves []relPath `toml:"-" json:"-"`
}

// Redaction holds the operator's extra secret patterns: one table with two
// uses, terminald's output redaction and the risk radar's content scanner
// (every server's radar). Every server refuses to start when a pattern is
// bad, naming it.
type Redaction struct {
	// Patterns are extra secret patterns, added to the builtin ones (named
	// aws-access-key-id, github-token, private-key, url-credentials,
	// secret-assignment and so on; docs/terminald.md lists them). Each
	// entry is either a string, a Go (RE2) regular expression, or a table
	// {name = "...", regex = "..."}. terminald replaces a match in command
	// output by "[REDACTED:<name>]" ("[REDACTED:operator]" for an unnamed
	// pattern), and the radar reports a file holding one as HIGH_RISK with
	// the reason "operator pattern <name>" (or its index). With a capturing
	// group only the first group is redacted. A pattern that does not
	// compile, matches the empty string, or has a name that is not 1 to 64
	// letters, digits, '-', '_' or '.', or that a builtin or an earlier
	// pattern already has, stops every server at startup.
	Patterns []RedactionPattern `toml:"patterns" json:"patterns"`
	// Entropy turns on the high-entropy-token fallback (off by default).
	// It applies to terminald's output only, not to the radar.
	Entropy bool `toml:"entropy" json:"entropy"`
}

// RedactionPattern is one [redaction] patterns entry: a bare string is
// the regular expression of an unnamed pattern.
type RedactionPattern struct {
	// Name names the pattern in redaction markers and radar reasons (optional).
	Name string `toml:"name" json:"name"`
	// Regex is the Go (RE2) regular expression.
	Regex string `toml:"regex" json:"regex"`
}

// UnmarshalText reads the short form of an entry, a bare string: an
// unnamed pattern.
func (p *RedactionPattern) UnmarshalText(b []byte) error {
	*p = RedactionPattern{Regex: string(b)}
	return nil
}

// Extras returns the patterns as safety/redact takes them.
func (r Redaction) Extras() []redact.Extra {
	out := make([]redact.Extra, len(r.Patterns))
	for i, p := range r.Patterns {
		out[i] = redact.Extra{Name: p.Name, Regex: p.Regex}
	}
	return out
}

// Sweep is sweepd's section.
type Sweep struct {
	// Roots are the directories sweepd may scan and reclaim in.
	Roots []string `toml:"roots" json:"roots"`
	// TicketTTL is how long a scan's ids stay redeemable (Go duration, default "1h").
	TicketTTL string `toml:"ticket_ttl" json:"ticket_ttl"`
	// Disable lists target kinds that are never found nor reclaimed.
	Disable []string `toml:"disable" json:"disable"`
	// MaxFinds bounds one scan's response (default 500).
	MaxFinds int `toml:"max_finds" json:"max_finds"`
	// AllowTracked lets a find that holds files git tracks (a committed
	// node_modules, dist or vendor) be reclaimed; by default it is kept
	// (keep: true, with the reason) and its reclaim refused. Even when
	// true, the person's question counts the tracked files that go.
	AllowTracked bool `toml:"allow_tracked" json:"allow_tracked"`
}

// Terminal is terminald's section.
type Terminal struct {
	// JailRoot is the only tree commands may write (and their working
	// directories must lie in); required, no default.
	JailRoot string `toml:"jail_root" json:"jail_root"`
	// Profile is "allowlist" (default: shells, wrappers and interpreters
	// can never be allowlisted; the command policy bounds what runs) or
	// "sandbox" (they may be allowlisted, so bash, python3, make, go, npm
	// and cargo can run; deny lists and argument rules still apply, but the
	// kernel boundary is the guarantee, so the profile needs landlock =
	// "required" and isolation = "namespaces" and refuses to start
	// otherwise).
	Profile string `toml:"profile" json:"profile"`
	// Limits bound each command.
	Limits TerminalLimits `toml:"limits" json:"limits"`
	// Sandbox configures kernel confinement.
	Sandbox TerminalSandbox `toml:"sandbox" json:"sandbox"`
	// Allowlist names the only commands that may run; anything else is denied.
	Allowlist CommandList `toml:"allowlist" json:"allowlist"`
	// Ask names commands every run of which needs a person's approval
	// (they need not be allowlisted too; ask wins over allow). A denylisted
	// or never-allowed program cannot be listed: deny wins over ask.
	Ask CommandList `toml:"ask" json:"ask"`
	// Denylist names commands that never run, even if allowlisted or on
	// the ask list (deny wins).
	Denylist CommandList `toml:"denylist" json:"denylist"`
	// Rules deny, or ask a person about, argument combinations of
	// allowlisted commands.
	Rules []TerminalRule `toml:"rules" json:"rules"`
	// Env configures the child environment (exactly PATH, HOME, LANG, TMPDIR plus Pass).
	Env TerminalEnv `toml:"env" json:"env"`
	// State is where terminald keeps each run's private HOME and TMPDIR.
	State TerminalStateDir `toml:"state" json:"state"`
	// Sessions bound the long-running commands started in the background
	// (run_command background: true): dev servers, watchers, REPLs.
	Sessions TerminalSessions `toml:"sessions" json:"sessions"`
	// RawOutput, when true, returns a command's stdout and stderr with
	// their terminal control characters as the command wrote them. By
	// default (false) every ESC and other C0 control but newline and tab,
	// DEL, every C1 control, every bidi control and every byte that is not
	// valid UTF-8 is shown as a visible escape (\x1b, \u202e) after
	// redaction and before the output cap, and detail.neutralised counts
	// them: a client that prints the output in a terminal then runs none of
	// them (no clipboard write, link, cursor movement or reordered text).
	RawOutput bool `toml:"raw_output" json:"raw_output"`
}

// TerminalLimits bounds each command.
type TerminalLimits struct {
	// TimeoutSeconds kills the command's whole process group after this
	// many seconds (1..3600, default 30).
	TimeoutSeconds int `toml:"timeout_seconds" json:"timeout_seconds"`
	// MaxOutputBytes caps stdout and stderr each, after redaction
	// (1..16 MiB, default 65536); output past the cap is drained, not kept.
	MaxOutputBytes int `toml:"max_output_bytes" json:"max_output_bytes"`
	// MemoryMB bounds the memory of one command in MiB (16..65536,
	// default 2048; 0 means the default): all it pins, resident or not.
	// Enforced by RLIMIT_DATA per process (5/4 of it), a memory cgroup of
	// the run where the server can create one (root on cgroup v1, or a
	// delegated cgroup v2 subtree: it charges tmpfs, socket and pipe
	// buffers too), and a watchdog over the total resident memory of all
	// the command's processes plus its /dev/shm and (isolation
	// "namespaces") its socket buffers. A command it stops reports
	// detail.limit = "memory".
	MemoryMB int `toml:"memory_mb" json:"memory_mb"`
	// MaxProcesses bounds the tasks (processes and threads together) of one
	// command (8..65536, default 1024; 0 means the default), enforced by a
	// watchdog over all the command's tasks, plus RLIMIT_NPROC in the
	// command's own user namespace (isolation "namespaces" only). A
	// command it stops reports detail.limit = "processes".
	MaxProcesses int `toml:"max_processes" json:"max_processes"`
	// CPUSeconds bounds the CPU time of one command in seconds (1..86400,
	// default 600; 0 means the default), enforced by RLIMIT_CPU per process
	// (SIGXCPU, then SIGKILL a second later); the wall-clock timeout bounds
	// the rest. A command it stops reports detail.limit = "cpu".
	CPUSeconds int `toml:"cpu_seconds" json:"cpu_seconds"`
	// MaxFileMB bounds the size of any one file a command writes, in MiB
	// (1..1048576, default 1024; 0 means the default), enforced by
	// RLIMIT_FSIZE (a write past it fails with EFBIG). It bounds each
	// file, not the total written. A command it stops reports
	// detail.limit = "file_size".
	MaxFileMB int `toml:"max_file_mb" json:"max_file_mb"`
	// MaxOpenFiles bounds the file descriptors each process of a command
	// may hold open (16..1048576, default 1024; 0 means the default),
	// enforced by RLIMIT_NOFILE per process. A command it stops reports
	// detail.limit = "open_files".
	MaxOpenFiles int `toml:"max_open_files" json:"max_open_files"`
	// MaxConcurrent bounds the commands that run at once, across all the
	// server's calls (1..64, default 2; 0 means the default). Each running
	// command has its own memory_mb, max_processes and /dev/shm, so these
	// totals are max_concurrent times the per-command limits. A call beyond
	// it waits for a slot in a queue of max_queued; the wait does not count
	// against timeout_seconds but is itself bounded by it.
	MaxConcurrent int `toml:"max_concurrent" json:"max_concurrent"`
	// MaxQueued bounds the calls that wait for a slot when max_concurrent
	// commands run (1..1024, default 8; 0 means the default). A call beyond
	// it, or one that waited timeout_seconds without a slot, runs nothing
	// and is refused with LIMIT_EXCEEDED and detail.limit = "concurrency".
	MaxQueued int `toml:"max_queued" json:"max_queued"`
	// DiskMB bounds what one command writes to files in MiB: the jail,
	// its private HOME and TMPDIR and the caches together (1..1048576,
	// default 10240; 0 means the default). A watchdog sums the bytes its
	// processes wrote (the kernel's write_bytes, less what was removed
	// before reaching the disk) and ends them all past it; a file rewritten
	// counts each time. A command it stops reports detail.limit = "disk".
	DiskMB int `toml:"disk_mb" json:"disk_mb"`
}

// TerminalSandbox configures kernel confinement.
type TerminalSandbox struct {
	// Landlock is "required" (default: refuse to start without it),
	// "best-effort" (run unconfined where unavailable, and say so) or "off".
	// The sandbox profile needs "required".
	Landlock string `toml:"landlock" json:"landlock"`
	// Isolation is "namespaces" (default: each command runs in new mount,
	// PID, network, IPC and UTS namespaces, plus a user namespace when the
	// server is not root, and sees only the jail, its private HOME and
	// TMPDIR, the caches and read_paths, with Landlock and seccomp inside
	// as a second wall; terminald refuses to start where the kernel refuses
	// namespaces to its user) or "landlock" (Landlock and seccomp only, no
	// namespaces: a descendant that leaves the command's process group can
	// outlive it). The sandbox profile and network = "proxy" need
	// "namespaces".
	Isolation string `toml:"isolation" json:"isolation"`
	// Network is "deny" (default: the command has only its own loopback; no
	// TCP, UDP or raw traffic reaches the host or the world, and no host
	// UNIX socket), "allow" (the host's network) or "proxy" (the only way
	// out is terminald's HTTP/HTTPS CONNECT proxy, which admits only
	// allowed_hosts; needs isolation = "namespaces").
	Network string `toml:"network" json:"network"`
	// AllowedHosts are the host patterns the proxy admits when network =
	// "proxy" (required then, and refused with any other network): an
	// exact host ("example.com", "localhost", "192.0.2.7") or "*." and a
	// domain of at least two labels ("*.example.org" matches any subdomain
	// at any depth, but not example.org itself). Patterns are compared in
	// lower case and name a host only: no scheme, path, port or trailing
	// dot; an allowed host is admitted on any port.
	AllowedHosts []string `toml:"allowed_hosts" json:"allowed_hosts"`
	// Registries adds the hosts of package registries to what the proxy
	// admits when network = "proxy", a subset of "go" (proxy.golang.org,
	// sum.golang.org), "npm" (registry.npmjs.org), "pip" (pypi.org,
	// files.pythonhosted.org) and "cargo" (crates.io, index.crates.io,
	// static.crates.io): the hosts each tool reaches with its default
	// configuration. network = "proxy" needs registries, allowed_hosts or
	// both; registries with any other network is refused.
	Registries []string `toml:"registries" json:"registries"`
	// GitIdentity (default false), when true, gives commands the person's
	// git identity: terminald reads user.name and user.email from the
	// host's global git configuration (git config --global --get) at
	// startup, writes those two keys, and nothing else (no credentials,
	// helpers, hooks, aliases or includes), to a file in its state
	// directory, and points GIT_CONFIG_GLOBAL at it read-only, so git
	// commit inside the sandbox records the person as author and
	// committer and a repository's own user.email still wins.
	GitIdentity bool `toml:"git_identity" json:"git_identity"`
	// Caches lists persistent, writable tool caches, a subset of "go",
	// "npm", "pip" and "cargo". Each is a directory under terminald's state
	// directory, never inside the jail and never the user's own cache,
	// shared by every command of the same jail, with the tool's variables
	// pointed at it (GOCACHE and GOMODCACHE; npm_config_cache;
	// PIP_CACHE_DIR; CARGO_HOME), so a second build reuses the first one's
	// downloads. The caches are per jail: caches/<key>/<tool> in the state
	// directory, the key derived from the jail's path and identity, so a
	// jail deleted and made again starts with empty caches.
	Caches []string `toml:"caches" json:"caches"`
	// ShareCaches (default false) puts the caches at caches/<tool> in the
	// state directory, shared by every terminald using that state
	// directory whatever its jail. RISK: a command of one jail can then
	// plant a module, package or build result that another jail's builds
	// use without checking (a poisoned GOCACHE entry or pip wheel runs in
	// the other project's tests); set it only when every jail holds code
	// you trust alike.
	ShareCaches bool `toml:"share_caches" json:"share_caches"`
	// ReadPaths replaces the read-only (and executable) trees a command may
	// use besides the jail; empty means the sandbox's default system set
	// (/usr, /bin, /lib..., a few /etc files).
	ReadPaths []string `toml:"read_paths" json:"read_paths"`
	// Protect adds paths to the protected set: slash-separated, relative,
	// matched at any depth of the jail, each protecting the path and all
	// beneath it. Protected paths make a person's own tools run code later
	// (git hooks and config, editor tasks, .envrc, agent-client settings,
	// shell start-up files, .npmrc; the built-in list is in
	// docs/terminald.md): with isolation "namespaces" those that exist are
	// read-only to commands (a repository's .git cannot be renamed or
	// removed), and whatever a command creates, changes or removes there is
	// moved into the quarantine under the state directory, and the original
	// written back, before the answer.
	Protect []string `toml:"protect" json:"protect"`
	// Unprotect opts built-in (or added) protected paths out, one pattern
	// each, with the reason (both required): for example a project whose
	// agent must edit .vscode/settings.json unprotects ".vscode".
	Unprotect []Unprotect `toml:"unprotect" json:"unprotect"`
}

// Unprotect is one [[terminal.sandbox.unprotect]] entry.
type Unprotect struct {
	// Path is the protected pattern to opt out, exactly as the built-in
	// list (or protect) names it.
	Path string `toml:"path" json:"path"`
	// Reason says why commands may change it; required.
	Reason string `toml:"reason" json:"reason"`
}

// CommandList is a list of command names.
type CommandList struct {
	// Commands are command names as you would type them (python3, gawk,
	// nodejs), not paths. Each is normalised the way the program name of a
	// command line is (lower case, known aliases and version suffixes
	// folded: python3.11 and python3 are python, gawk is awk), so one entry
	// covers every spelling of the program.
	Commands []string `toml:"commands" json:"commands"`
}

// TerminalRule is one argument rule.
type TerminalRule struct {
	// Command is the allowlisted (or asked-about) command the rule applies
	// to, normalised like the allowlist's names.
	Command string `toml:"command" json:"command"`
	// DenyArgs: each entry is a space-separated token set; a command line
	// containing all of its tokens, in any order and any spelling of the
	// options, is denied.
	DenyArgs []string `toml:"deny_args" json:"deny_args"`
	// AskArgs: entries written and matched exactly like deny_args; a
	// command line matching one runs only once a person approves it. Deny
	// wins: every rule's deny_args are tried first. A rule has deny_args,
	// ask_args or both.
	AskArgs []string `toml:"ask_args" json:"ask_args,omitempty"`
	// LongOptions lists the command's long options, so unique-prefix
	// abbreviations are recognised (built in for the shipped commands).
	LongOptions []string `toml:"long_options" json:"long_options,omitempty"`
	// Reason is shown to the agent when the rule denies, and says why a
	// person is asked when it asks.
	Reason string `toml:"reason" json:"reason"`
}

// TerminalEnv configures the child environment.
type TerminalEnv struct {
	// Path is the scrubbed PATH, the only place executables are resolved.
	Path []string `toml:"path" json:"path"`
	// Pass lists extra variable names copied from the server's environment.
	Pass []string `toml:"pass" json:"pass"`
}

// TerminalSessions bounds terminald's sessions: commands that keep running
// after the call that started them, each in its own sandbox with the
// per-command limits but timeout_seconds, which these keys replace.
type TerminalSessions struct {
	// Max bounds the sessions alive at once (1..64, default 4; 0 means the
	// default). A start beyond it runs nothing and is refused with
	// LIMIT_EXCEEDED and detail.limit = "sessions". Each live session also
	// holds one of the [terminal.limits] max_concurrent slots.
	Max int `toml:"max" json:"max"`
	// IdleMinutes ends a session, with every process it started, when it
	// has printed nothing and been neither read nor sent input for this
	// many minutes (1..1440, default 30; 0 means the default); its end
	// reports detail.limit = "idle".
	IdleMinutes int `toml:"idle_minutes" json:"idle_minutes"`
	// MaxLifetimeMinutes ends a session, with every process it started,
	// this many minutes after it started, busy or not (1..10080, default
	// 240; 0 means the default); its end reports detail.limit = "lifetime".
	MaxLifetimeMinutes int `toml:"max_lifetime_minutes" json:"max_lifetime_minutes"`
	// PublishPorts, when true, makes a TCP port that a session listens on
	// in its own network namespace (isolation "namespaces", network not
	// "allow") reachable from the host on 127.0.0.1 only, on a port
	// terminald chooses; the session's answers show ports: [{inside,
	// url}], and each publication is an audit event. Nothing else of the
	// host network opens. Default false.
	PublishPorts bool `toml:"publish_ports" json:"publish_ports"`
}

// TerminalStateDir is where terminald keeps private HOME and TMPDIR.
type TerminalStateDir struct {
	// Dir holds the private HOME and TMPDIR of each run; it must lie
	// outside the jail (default $XDG_STATE_HOME/bastion/terminald).
	Dir string `toml:"dir" json:"dir"`
}

// Organizer is organizerd's section.
type Organizer struct {
	// WorkspaceRoot is the folder organizerd tidies; required, no default.
	WorkspaceRoot string `toml:"workspace_root" json:"workspace_root"`
	// Journal is the write-ahead journal file (outside the workspace;
	// default $XDG_STATE_HOME/bastion/organizerd.journal).
	Journal string `toml:"journal" json:"journal"`
	// RecentSeconds: the planner leaves files modified this recently alone
	// (they may still be being written); default 5, negative turns it off.
	RecentSeconds int `toml:"recent_seconds" json:"recent_seconds"`
	// Categories maps a folder name to its extensions; an entry replaces
	// that folder's default, an empty list removes it, a new name adds one.
	Categories map[string][]string `toml:"categories" json:"categories"`
	// Skip adds or replaces skip rules (see docs/organizerd.md).
	Skip []SkipRule `toml:"skip" json:"skip"`
}

// SkipRule is one [[organizer.skip]] entry.
type SkipRule struct {
	// Name identifies the rule; reusing a restraint rule's name replaces it.
	Name string `toml:"name" json:"name"`
	// Layer is "protection" (every tool) or "restraint" (planner only);
	// required, a missing layer is a startup error.
	Layer string `toml:"layer" json:"layer"`
	// When lists alternative conditions; terms joined with "&" must all hold.
	When []string `toml:"when" json:"when"`
	// Reason is shown to the agent for each skipped item.
	Reason string `toml:"reason" json:"reason"`
}

// Radar is the risk radar's section.
type Radar struct {
	// RuleFiles are operator risk-rule files (TOML, [[rule]] tables),
	// hot-reloaded when they change.
	RuleFiles []string `toml:"rule_files" json:"rule_files"`
	// ScanBytes is how much of each file the content scanner reads
	// (default 4096; negative turns content scanning off).
	ScanBytes int `toml:"scan_bytes" json:"scan_bytes"`
	// SummaryMaxEntries is how many entries (files and directories)
	// get_context_summary walks before it stops and says its counts are
	// partial (default 2000000; between 1000 and 1000000000). Raise it
	// past the size of the workspace to have whole counts; memory does
	// not grow with it.
	SummaryMaxEntries int `toml:"summary_max_entries" json:"summary_max_entries"`
}

// Fatal is a startup error: the server prints "fatal: " + message and exits 2.
type Fatal struct {
	Msg string
	// Err is the typed error behind the message, if any (for example a
	// *redact.PatternError); errors.As finds it through Unwrap.
	Err error
	// Key is the policy key the problem is about (dotted, with array
	// indexes), when there is one: Policy.Locate adds its file and line.
	Key string

	placed bool
}

func (f *Fatal) Error() string { return f.Msg }

// Unwrap returns the typed error behind the message, or nil.
func (f *Fatal) Unwrap() error { return f.Err }

// Fatalf builds a Fatal.
func Fatalf(format string, args ...any) error { return &Fatal{Msg: fmt.Sprintf(format, args...)} }

// Exit prints err as one "fatal:" line on w and returns the exit code 2.
func Exit(w io.Writer, err error) int {
	msg := err.Error()
	msg = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(msg)
	fmt.Fprintf(w, "fatal: %s\n", msg)
	return 2
}

// Load reads the policy named by path, or by $BASTION_POLICY_FILE when path
// is empty. With neither, it returns an empty Policy (servers that can run
// from flags alone, like sweepd --root, decide whether that is enough).
// Environment overrides are applied in every case.
func Load(path string) (*Policy, error) {
	if path == "" {
		path = os.Getenv(EnvPolicyFile)
	}
	p := &Policy{}
	if path != "" {
		var err error
		if p, err = LoadFile(path); err != nil {
			return nil, err
		}
	}
	p.applyEnv()
	return p, p.Locate(p.validateShared())
}

// LoadFile reads and strictly decodes one policy file, resolving its
// relative paths against the file's directory ("~/" against the home
// directory). It does not apply env
// overrides.
func LoadFile(path string) (*Policy, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, Fatalf("policy file %q: cannot make the path absolute", path)
	}
	// Refuse a directory, FIFO or device before opening it: opening a FIFO
	// would block startup forever.
	if fi, err := os.Stat(abs); err == nil {
		if fi.IsDir() {
			return nil, Fatalf("policy file %s is a directory", abs)
		}
		if !fi.Mode().IsRegular() {
			return nil, Fatalf("policy file %s is not a regular file", abs)
		}
	}
	f, err := os.Open(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, Fatalf("policy file %s does not exist (pass --config PATH or set %s)", abs, EnvPolicyFile)
		}
		return nil, Fatalf("policy file %s cannot be read: %v", abs, errors.Unwrap(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, Fatalf("policy file %s is not a regular file", abs)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPolicyBytes+1))
	if err != nil {
		return nil, Fatalf("policy file %s cannot be read", abs)
	}
	if len(b) > MaxPolicyBytes {
		return nil, Fatalf("policy file %s is larger than %d bytes", abs, MaxPolicyBytes)
	}
	p, err := Parse(b)
	if err != nil {
		// "line N: ..." reads "policy file F, line N: ...".
		return nil, &Fatal{Msg: fmt.Sprintf("policy file %s, %v", abs, err), Err: err}
	}
	p.File = abs
	if err := p.resolve(filepath.Dir(abs)); err != nil {
		return nil, p.Locate(err)
	}
	return p, nil
}

// Parse strictly decodes policy TOML. Unknown keys and type mismatches are
// errors in the person's words: each problem reads "line N: " and the key,
// then what the key takes (a whole number, a list of strings, one of the
// listed values) and what was found, never a Go type; an unknown key gets
// the key probably meant and the keys its table takes.
func Parse(b []byte) (*Policy, error) {
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, errors.New("the file contains a NUL byte; it is not TOML text")
	}
	ix := indexKeys(b)
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, explainDecode(b, ix, err)
	}
	p.keys = ix
	return &p, nil
}

// resolve makes every path absolute: "~" and "~/..." against the home
// directory, any other relative path against dir (the policy file's
// folder). It records each relative path that leads out of dir (a copy
// of the file elsewhere would point elsewhere), for check to warn about.
func (p *Policy) resolve(dir string) error {
	var bad error
	abs := func(key string, s *string) {
		switch {
		case *s == "":
		case *s == "~" || strings.HasPrefix(*s, "~/"):
			h, err := os.UserHomeDir()
			if err != nil || h == "" {
				bad = keyFatalf(key, "%s %q starts with ~, and there is no home directory ($HOME) to expand it to", key, *s)
				return
			}
			*s = filepath.Join(h, strings.TrimPrefix(*s, "~"))
		case !filepath.IsAbs(*s):
			written := *s
			*s = filepath.Join(dir, *s)
			if rel, err := filepath.Rel(dir, *s); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				p.leaves = append(p.leaves, relPath{key, written, *s})
			}
		}
	}
	abs("audit_log", &p.AuditLog)
	for i := range p.Sweep.Roots {
		abs("sweep.roots", &p.Sweep.Roots[i])
	}
	abs("terminal.jail_root", &p.Terminal.JailRoot)
	abs("terminal.state.dir", &p.Terminal.State.Dir)
	abs("organizer.workspace_root", &p.Organizer.WorkspaceRoot)
	abs("organizer.journal", &p.Organizer.Journal)
	for i := range p.Radar.RuleFiles {
		abs("radar.rule_files", &p.Radar.RuleFiles[i])
	}
	return bad
}

// relPath is a relative path of the policy file that leads out of the
// file's folder.
type relPath struct{ key, written, resolved string }

func (p *Policy) applyEnv() {
	p.fromEnv = map[string]string{}
	set := func(dst *string, name, key string) {
		if v := os.Getenv(name); v != "" {
			*dst = v
			p.fromEnv[key] = name
		}
	}
	set(&p.AuditLog, EnvAuditLog, "audit_log")
	set(&p.AuditFailMode, EnvAuditFailMode, "audit_fail_mode")
	set(&p.Terminal.JailRoot, EnvJailRoot, "terminal.jail_root")
	set(&p.Organizer.WorkspaceRoot, EnvWorkspaceRoot, "organizer.workspace_root")
	set(&p.Organizer.Journal, EnvJournal, "organizer.journal")
	if v := os.Getenv(EnvSweepRoots); v != "" {
		p.fromEnv["sweep.roots"] = EnvSweepRoots
		// Empty elements ("a::b", a trailing separator) are dropped: an
		// empty root would otherwise mean the working directory.
		p.Sweep.Roots = nil
		for _, r := range filepath.SplitList(v) {
			if r != "" {
				p.Sweep.Roots = append(p.Sweep.Roots, r)
			}
		}
	}
}

func (p *Policy) validateShared() error {
	switch p.AuditFailMode {
	case "", "closed", "open":
	default:
		return keyFatalf("audit_fail_mode", "audit_fail_mode must be \"closed\" or \"open\", not %q%s", p.AuditFailMode, meant(p.AuditFailMode, []string{"closed", "open"}))
	}
	if p.Sweep.TicketTTL != "" {
		d, err := time.ParseDuration(p.Sweep.TicketTTL)
		if err != nil || d < time.Second || d > 7*24*time.Hour {
			return keyFatalf("sweep.ticket_ttl", "sweep.ticket_ttl must be a Go duration between 1s and 168h, not %q", p.Sweep.TicketTTL)
		}
	}
	if p.Sweep.MaxFinds < 0 || p.Sweep.MaxFinds > 100000 {
		return keyFatalf("sweep.max_finds", "sweep.max_finds must be between 1 and 100000, not %d", p.Sweep.MaxFinds)
	}
	if err := p.Radar.validate(); err != nil {
		return err
	}
	if err := redact.Check(p.Redaction.Extras()); err != nil {
		return &Fatal{Msg: err.Error(), Err: err, Key: "redaction.patterns"}
	}
	if err := p.Approval.validate(); err != nil {
		return err
	}
	if err := p.Audit.validate(); err != nil {
		return err
	}
	if err := p.Telemetry.validate(); err != nil {
		return err
	}
	return p.Terminal.Validate()
}

// TTL returns sweep.ticket_ttl or its default of one hour.
func (s Sweep) TTL() time.Duration {
	if d, err := time.ParseDuration(s.TicketTTL); err == nil && d > 0 {
		return d
	}
	return time.Hour
}

// IsWithin reports whether path lies at or beneath dir, after resolving the
// symlinks of the existing part of each, the way the kernel would: a ".."
// after a symlink leaves the link's target, and a dangling symlink counts
// as where it points (creating a file through it lands there). Relative
// paths are taken against the working directory.
func IsWithin(path, dir string) bool {
	p, d := canonical(path), canonical(dir)
	if p == d {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator))
}

// maxLinks bounds the symlinks followed by canonical (like the kernel's
// ELOOP limit).
const maxLinks = 255

// canonical is Resolve's path, ignoring a symlink loop (the partial
// resolution is still the best answer for a containment check).
func canonical(path string) string {
	r, _, _ := Resolve(path)
	return r
}

// ErrSymlinkLoop is returned by Resolve when a path needs more than
// maxLinks symbolic links.
var ErrSymlinkLoop = errors.New("too many levels of symbolic links")

// Resolve resolves path component by component, as the kernel does:
// symlinks are followed (dangling ones too), ".." is applied to the
// resolved prefix, and the part that does not exist is kept as written. It
// also returns the location of every symlink it followed, so a caller can
// ask where each of them lives, not only where the path ends. Relative
// paths are taken against the working directory.
func Resolve(path string) (resolved string, links []string, err error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	vol := filepath.VolumeName(path)
	resolved = vol + string(filepath.Separator)
	pending := splitPath(path[len(vol):])
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, pending...)...), links, nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if len(links) >= maxLinks {
			return filepath.Join(append([]string{next}, pending...)...), links, ErrSymlinkLoop
		}
		links = append(links, next)
		target, err := os.Readlink(next)
		if err != nil {
			return filepath.Join(append([]string{next}, pending...)...), links, nil
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			resolved = v + string(filepath.Separator)
			target = target[len(v):]
		}
		pending = append(splitPath(target), pending...)
	}
	return resolved, links, nil
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return os.IsPathSeparator(uint8(r)) })
}

// CheckOutside returns a Fatal error when the state file path lies inside
// any of the roots: state (audit log, journal) must not be writable by the
// tools it records.
func CheckOutside(what, path string, roots []string) error {
	for _, r := range roots {
		if r != "" && IsWithin(path, r) {
			return Fatalf("%s %s lies inside root %s; state files must live outside every root", what, path, r)
		}
	}
	return nil
}

// AuditPath returns the audit log file for server: audit_log with the
// server's name inserted before the extension (state/audit.jsonl becomes
// state/audit.sweepd.jsonl: one hash chain per server, so two servers never
// interleave writes), or <defaultDir()>/<server>.audit.jsonl when audit_log
// is unset.
func (p *Policy) AuditPath(server string, defaultDir func() (string, error)) (string, error) {
	if p.AuditLog == "" {
		dir, err := defaultDir()
		if err != nil {
			return "", Fatalf("no audit_log in the policy and no state directory ($XDG_STATE_HOME or $HOME): set audit_log")
		}
		return filepath.Join(dir, server+".audit.jsonl"), nil
	}
	if !filepath.IsAbs(p.AuditLog) {
		abs, err := filepath.Abs(p.AuditLog)
		if err != nil {
			return "", Fatalf("audit_log %q cannot be made absolute", p.AuditLog)
		}
		p.AuditLog = abs
	}
	ext := filepath.Ext(p.AuditLog)
	return strings.TrimSuffix(p.AuditLog, ext) + "." + server + ext, nil
}
