// Package sandbox runs one already-approved argv as a confined child process:
// the process boundary of Bastion (DESIGN §4b). Its threat model is that
// the command is arbitrary code: whatever an allowed program can be made to
// run must stay inside.
//
// It refuses to:
//   - run anything through a shell: the argv is executed as given;
//   - pass the server's environment on: the child sees exactly PATH, HOME,
//     LANG, TMPDIR, the proxy variables (network "proxy") and the
//     NAME=VALUE pairs the caller lists;
//   - give the child the server's stdin (the MCP stream), or any descriptor
//     but stdout, stderr and the input the caller gives it (Spec.Stdin,
//     /dev/null when none);
//   - show the child anything of the host but the jail, its private HOME
//     and TMPDIR, the caches and the read paths (namespaces isolation);
//   - let anything the command started outlive it, its timeout, or the
//     server (the helper is PID 1 of the command's PID namespace);
//   - give the child a capability, a setuid bit, ptrace, io_uring, kernel
//     keyrings or memory no resident set shows;
//   - let the child create a socket of a family the namespaces do not
//     isolate (only AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE);
//   - open more of either network than a published port (Spec.Publish:
//     the host's 127.0.0.1 only, to the command's own loopback, for as
//     long as the run lasts);
//   - run the child as the host's root (namespaces isolation): a root
//     server's command runs as the jail's owner, or nobody, through its
//     user namespace and idmapped copies of its root-owned trees;
//   - run unconfined when confinement was required: with Mode "required" and
//     no usable Landlock, Run and Preflight answer POLICY_DENIED.
//
// On Linux a confined run is carried out by a helper, this binary
// re-executed (see confined_linux.go and helper_linux.go): with isolation
// "namespaces" it is the first process of new user, mount, PID, network,
// IPC and UTS namespaces and builds the command's view; with "landlock" it
// stays in the host's namespaces as the command's subreaper. Either way it
// starts the command from a thread that carries no_new_privs, no
// capabilities, the seccomp filter and the Landlock domain, holds it at its
// exec until its rlimits are set, watches its tasks and memory, and ends
// every process of it when it ends.
//
// Known limits, stated where they apply: the bytes written to disk are
// bounded as bytes written, not space taken (Limits.DiskMB); without a
// memory cgroup, pipe buffers count at their default capacity, and a socket
// or pipe passed away and closed not at all; with landlock isolation the
// host's paths can be probed (stat) and metadata changes are refused everywhere; off Linux,
// and with landlock "off", the child runs as a plain child whose process
// group is killed at the end ("required" refuses there).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Mode says how much kernel confinement a run demands.
type Mode string

// The three modes of [terminal.sandbox] landlock.
const (
	// ModeRequired refuses to run anything where Landlock is unavailable.
	// The empty Mode means ModeRequired.
	ModeRequired Mode = "required"
	// ModeBestEffort confines where Landlock is available and otherwise
	// runs unconfined, saying so in Outcome.Confinement.
	ModeBestEffort Mode = "best-effort"
	// ModeOff never confines.
	ModeOff Mode = "off"
)

// MaxPrepared is how many helpers a caller may keep prepared (Prepare)
// for runs to come (Linux): each is a process with its namespaces and view
// built. Prepare ends the oldest only past twice as many, so that the
// helpers of runs already on their way (taken by the caller, not yet
// claimed by Run) do not push out the ones kept for later.
const MaxPrepared = 4

// DefaultReadPaths is the read-only (and executable) set used when
// Spec.ReadPaths is empty: the program and library trees, and the few files
// under /etc and /dev that ordinary programs open (dynamic linker cache,
// user and group names, time zone, resolver and TLS configuration, git's
// system config, random devices). Paths that do not exist are skipped.
//
// It deliberately leaves out the rest of /etc (shadow, ssh host keys,
// sudoers), /home and /root, /tmp, /var, /run and /proc. /proc/self cannot be
// granted by Landlock, whose rules name inodes: the parent's /proc/self is
// another directory than the child's, and granting all of /proc would show
// every process's command line.
var DefaultReadPaths = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
	"/etc/localtime", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf",
	"/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/ssl",
	"/etc/ca-certificates", "/etc/gitconfig", "/etc/magic", "/etc/mime.types", "/etc/alternatives",
	"/dev/zero", "/dev/random", "/dev/urandom",
}

// Isolation says what walls a command runs behind on Linux.
type Isolation string

// The two isolation modes of [terminal.sandbox] isolation.
const (
	// IsolationNamespaces (the default, the empty Isolation) runs each
	// command as the child of a helper that is the first process of new
	// user, mount, PID, network (unless Network), IPC and UTS namespaces:
	// the command sees only the jail, its private HOME and TMPDIR, the
	// writable caches, the read paths, its own /proc and a minimal /dev;
	// when the helper ends, the kernel ends every process of the command.
	// Landlock and the seccomp filter apply inside as a second wall.
	IsolationNamespaces Isolation = "namespaces"
	// IsolationLandlock runs the command in the host's namespaces under
	// Landlock, the seccomp filter and the limits only. When the network is
	// denied, seccomp refuses every socket(2) (socketpair(2) stays allowed).
	// Without a user namespace no per-user kernel counter can be capped:
	// inotify and fanotify are refused, namespace counts are not capped.
	// What stays open in this mode: the command sees the host's process
	// table and its paths (Landlock still refuses what it may not read or
	// write), and a descendant that leaves the helper's reach after the
	// helper itself was killed by force survives.
	IsolationLandlock Isolation = "landlock"
)

// NetMode is the network a command gets.
type NetMode string

// The three network modes of [terminal.sandbox] network.
const (
	// NetDeny (the default) gives the command nothing but its own
	// loopback (namespaces), or no socket at all (landlock isolation).
	NetDeny NetMode = "deny"
	// NetAllow gives the command the host's network.
	NetAllow NetMode = "allow"
	// NetProxy gives the command its own loopback on which the helper
	// relays one port to Spec.ProxySocket, and sets the proxy variables.
	NetProxy NetMode = "proxy"
)

// Limits bound one command. A zero field takes its default.
type Limits struct {
	// MemoryMB bounds memory: RLIMIT_DATA per process at 5/4 of it; a
	// memory cgroup of the run where the server can make one (it charges
	// tmpfs, socket and pipe buffers too, see memcg_linux.go); and a
	// watchdog over the resident memory of every process of the command
	// plus its /dev/shm, socket buffers and pipes (memwatch_linux.go), which ends
	// them all when the sum passes MemoryMB.
	MemoryMB int
	// MaxProcesses bounds the tasks (processes and threads) of the command:
	// RLIMIT_NPROC, counted in the command's own user namespace, plus the
	// watchdog (which also holds where RLIMIT_NPROC does not apply: the
	// kernel exempts the host's root user from it, which a command is only
	// under landlock isolation with root-owned trees, see idmap_linux.go).
	MaxProcesses int
	// CPUSeconds is RLIMIT_CPU per process (SIGXCPU, then SIGKILL a second later).
	CPUSeconds int
	// MaxFileMB is RLIMIT_FSIZE: no file can be written past it.
	MaxFileMB int
	// MaxOpenFiles is RLIMIT_NOFILE per process.
	MaxOpenFiles int
	// DiskMB bounds the bytes the command's processes write to files (the
	// jail, HOME, TMPDIR, the caches), less what they remove while it is
	// still in the page cache; the watchdog ends them all past it (see
	// disk_linux.go for what it over- and under-counts).
	DiskMB int
}

// Default limits, used for zero fields of Limits.
const (
	DefaultMemoryMB     = 2048
	DefaultMaxProcesses = 1024
	DefaultCPUSeconds   = 600
	DefaultMaxFileMB    = 1024
	DefaultMaxOpenFiles = 1024
	DefaultDiskMB       = 10240
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MemoryMB, DefaultMemoryMB)
	def(&l.MaxProcesses, DefaultMaxProcesses)
	def(&l.CPUSeconds, DefaultCPUSeconds)
	def(&l.MaxFileMB, DefaultMaxFileMB)
	def(&l.MaxOpenFiles, DefaultMaxOpenFiles)
	def(&l.DiskMB, DefaultDiskMB)
	return l
}

// The names a limit goes by in Outcome.Limit (and detail.limit).
const (
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitCPU       = "cpu"
	LimitFileSize  = "file_size"
	LimitOpenFiles = "open_files"
	LimitTimeout   = "timeout"
	LimitDisk      = "disk"
)

// Spec is one run: what to execute, where, and under which confinement.
// The caller has already decided the command is allowed; Run decides only
// how it runs.
type Spec struct {
	// Path is the absolute path of the resolved executable.
	Path string
	// Argv is the argument vector; Argv[0] is the program's name.
	Argv []string
	// Dir is the absolute working directory, inside JailRoot. Run opens it
	// anchored beneath the jail (no symbolic link, no "..", no mount
	// crossing); the helper enters it only after checking, inside its own
	// view, that it is the very directory Run opened.
	Dir string
	// JailRoot is the writable tree the command works in.
	JailRoot string
	// TempDir is a private writable temporary directory, outside the jail;
	// TMPDIR points at it (and, with namespaces, /tmp shows it too).
	TempDir string
	// HomeDir is a private HOME outside the jail (never the user's home).
	HomeDir string
	// WritePaths are further writable trees outside the jail (the
	// persistent tool caches, see CacheSet).
	WritePaths []string
	// ReadPaths are the read-only trees; DefaultReadPaths when empty.
	// Files beneath them may also be executed.
	ReadPaths []string
	// ExecWritable lets the command execute files beneath the writable
	// trees (jail, HOME, TMPDIR, WritePaths): what builds and test runners
	// do. Off, only files beneath ReadPaths may be executed.
	ExecWritable bool
	// Env holds extra NAME=VALUE pairs the operator allowed. LANG may be
	// overridden here (default C.UTF-8); PATH, HOME and TMPDIR may not.
	Env []string
	// PathEnv is the scrubbed PATH value the child sees.
	PathEnv string
	// Network is the legacy switch for NetAllow; Net wins when set.
	Network bool
	// Net is the network mode (NetDeny when empty, unless Network).
	Net NetMode
	// ProxySocket is the UNIX socket of the filtering proxy (NetProxy only).
	ProxySocket string
	// Landlock is the confinement mode; empty means ModeRequired.
	Landlock Mode
	// Isolation is the wall around the command (IsolationNamespaces when
	// empty). It applies only where Landlock is in force; with landlock
	// "off" or unavailable under "best-effort", the command runs as a
	// plain child with only the process-group kill.
	Isolation Isolation
	// Limits bound the command (defaults for zero fields).
	Limits Limits
	// Timeout bounds the run; zero means only ctx bounds it.
	Timeout time.Duration
	// Protect is the jail's protected set (see safety/protect): with
	// namespaces isolation the protected paths that exist are mounted
	// read-only (a repository's .git pinned) in the command's view; in
	// every isolation, whatever the command created, changed or removed
	// at a protected path is undone before Run returns: moved into
	// QuarantineDir, the original written back (Outcome.Protected). Nil
	// protects nothing: runner.Runner always sets it.
	Protect *protect.Set
	// QuarantineDir receives what a command planted at protected paths,
	// one directory per run with a manifest; outside the jail.
	QuarantineDir string
	// Stdout and Stderr receive the child's output until EOF (nil discards).
	// The caller passes redacting, capping writers; a writer that fails is
	// skipped and the pipe still drained, so the child never blocks on it.
	Stdout, Stderr io.Writer
	// Stdin is the command's standard input; nil is /dev/null. An
	// *os.File (the read end of a pipe the caller writes, a session's
	// input) is handed to the command as it is and stays the caller's to
	// close; any other reader is copied into a pipe (see stdinFile). The
	// command gets this one descriptor more, never the server's own stdin.
	Stdin io.Reader `json:"-"`
	// TTY makes Stdin, which must then be the *os.File of a pseudo-
	// terminal's secondary side (the caller holds the primary), the
	// command's stdin, stdout and stderr and its controlling terminal, in
	// a session of its own (a session's tty: true). Stdout and Stderr then
	// receive nothing: the caller reads the terminal.
	TTY bool
	// Publish, when not nil, publishes the TCP ports the command listens
	// on in its own network namespace (namespaces isolation, network not
	// "allow"; elsewhere it is never called) on the host's 127.0.0.1 only,
	// on ports the kernel picks: when the command starts listening on its
	// loopback or wildcard address, Publish is called with Open set before
	// the host port accepts anything (an error withdraws the publication),
	// and again with Open false when the port is gone or the run ends.
	Publish func(PortEvent) error `json:"-"`
	// Terminate, when not nil, asks for a graceful end: once it is closed,
	// every process of the command gets SIGTERM; cancelling ctx then kills
	// what is left (a session's stop: signal, then kill).
	Terminate <-chan struct{} `json:"-"`
	// Started, when not nil, is called once the command's sandbox is built
	// and the command handed to it, right before its exec (a session's
	// answer waits for it, not for the command's end).
	Started func() `json:"-"`
	// Gate, when not nil, is waited for before the command is let run: its
	// sandbox is built, the command exec'd and stopped before its first
	// instruction meanwhile (the audit intent's fsync runs beside that
	// work). An error from it ends the stopped command, nothing of it
	// having run, and is Run's error.
	Gate func() error `json:"-"`
}

// PortEvent is a published port opened or closed (Spec.Publish).
type PortEvent struct {
	// Inside is the port the command listens on in its namespace.
	Inside int `json:"inside"`
	// URL is where the host reaches it: http://127.0.0.1:<host port>.
	URL string `json:"url"`
	// Open is false when the publication ended.
	Open bool `json:"-"`
}

// net returns the effective network mode.
func (s *Spec) net() NetMode {
	switch {
	case s.Net != "":
		return s.Net
	case s.Network:
		return NetAllow
	}
	return NetDeny
}

// Outcome is what happened to a run that started.
type Outcome struct {
	// ExitCode is the child's exit status, -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the child ("SIGKILL"), if any.
	Signal string
	// TimedOut is true when the timeout (or ctx's deadline) fired.
	TimedOut bool
	// Limit names the limit that stopped the command (LimitMemory, ...,
	// LimitTimeout), empty when none did.
	Limit string
	// Duration runs from start to the child being reaped.
	Duration time.Duration
	// CPUTime is the user+system time of the command's processes that
	// were reaped (namespaces: all of them).
	CPUTime time.Duration
	// PeakTasks and PeakRSSKB are the largest task count and total memory
	// of the command's processes that the watchdog saw: resident memory plus
	// what it counts outside resident sets (/dev/shm, socket buffers).
	PeakTasks int
	PeakRSSKB int64
	// Protected lists each protected path the command created, changed,
	// replaced or removed, and how it was undone.
	Protected []protect.Change
	// ReadOnly lists the protected paths that were read-only (or, for a
	// repository's .git, pinned) in the command's view: a write the
	// command reports failing there was the sandbox's refusal.
	ReadOnly []string
	// Lookups are the host names the command looked up through the view's
	// resolver, which answers every query "refused" (namespaces isolation
	// with network "deny" or "proxy"; see dns_linux.go): each is a name the
	// command tried to reach and the sandbox did not resolve. At most 32,
	// in the order first asked.
	Lookups []string
	// HelperPID is the host's process id of the run's helper (namespaces
	// isolation), whose relay is the command's only way to the proxy:
	// proxy refusals made for that process are this run's. Zero when
	// there is none. It identifies the run only while each helper serves
	// one command: a helper that came to relay for several runs at once
	// would need a relay (a socket connection) of its own per run.
	HelperPID int
	// Confinement describes what confined the child, e.g.
	// "namespaces(user,mnt,pid,net,ipc,uts) + landlock-abi7: fs+scope;
	// seccomp (socket families: unix,inet,inet6,netlink-route);
	// rlimits+watchdog" or "none (best-effort: landlock unavailable)".
	Confinement string
}

// drainGrace is how long output is still read after every process of the
// command is dead. Their pipe ends are closed by then; the grace only bounds
// how long a process that escaped (landlock isolation, helper killed by
// force) can keep the call waiting.
const drainGrace = 250 * time.Millisecond

// probeHook replaces Probe in tests, which cannot change the kernel: it
// simulates a kernel without Landlock or with an older ABI.
var probeHook func() (int, error)

func probe() (int, error) {
	if probeHook != nil {
		return probeHook()
	}
	return Probe()
}

func (m Mode) normalize() (Mode, error) {
	switch m {
	case "", ModeRequired:
		return ModeRequired, nil
	case ModeBestEffort, ModeOff:
		return m, nil
	}
	return "", result.New(result.InvalidRequest,
		fmt.Sprintf("unknown landlock mode %q (want required, best-effort or off)", string(m)))
}

func (i Isolation) normalize() (Isolation, error) {
	switch i {
	case "", IsolationNamespaces:
		return IsolationNamespaces, nil
	case IsolationLandlock:
		return i, nil
	}
	return "", result.New(result.InvalidRequest,
		fmt.Sprintf("unknown isolation %q (want namespaces or landlock)", string(i)))
}

func (n NetMode) valid() bool { return n == NetDeny || n == NetAllow || n == NetProxy }

// errUnavailable is the refusal of "required" mode where Landlock is missing.
var errUnavailable = result.New(result.PolicyDenied,
	`landlock = "required" but this system has no usable Landlock (Linux 5.13 or later with landlock enabled in the lsm= list); `+
		`nothing will run. Set landlock = "best-effort" to run unconfined on such systems`)

// Check is the startup check for mode alone (landlock isolation, network
// denied): see Preflight for the whole check.
func Check(mode Mode) (string, error) {
	return Preflight(mode, IsolationLandlock, NetDeny)
}

// runPlan is what a run will be confined by.
type runPlan struct {
	abi         int // 0: no Landlock, the command runs as a plain child
	iso         Isolation
	net         NetMode
	confinement string
}

// plan decides which ABI and isolation to confine with and describes it.
func plan(mode Mode, iso Isolation, net NetMode) (runPlan, error) {
	m, err := mode.normalize()
	if err != nil {
		return runPlan{}, err
	}
	if iso, err = iso.normalize(); err != nil {
		return runPlan{}, err
	}
	if !net.valid() {
		return runPlan{}, invalid("unknown network mode %q (want deny, allow or proxy)", string(net))
	}
	p := runPlan{iso: iso, net: net}
	errProxy := result.New(result.PolicyDenied,
		`network = "proxy" needs Landlock in force and isolation = "namespaces": an unconfined command could ignore the proxy`)
	if m == ModeOff {
		if net == NetProxy {
			return runPlan{}, errProxy
		}
		p.confinement = "none (landlock off)"
		return p, nil
	}
	abi, perr := probe()
	if abi <= 0 {
		if m == ModeRequired {
			if perr != nil {
				return runPlan{}, errUnavailable.Wrap(perr)
			}
			return runPlan{}, errUnavailable
		}
		if net == NetProxy {
			return runPlan{}, errProxy
		}
		p.confinement = "none (best-effort: landlock unavailable)"
		return p, nil
	}
	if iso == IsolationLandlock && net == NetProxy {
		return runPlan{}, result.New(result.PolicyDenied,
			`network = "proxy" needs isolation = "namespaces": only a network namespace can make the proxy the one way out`)
	}
	p.abi = abi
	p.confinement = describe(abi, iso, net)
	return p, nil
}

// socketFamilies names the socket families the seccomp filter lets a
// command create (sockfamily_linux.go), as describe says it.
const socketFamilies = "unix,inet,inet6,netlink-route"

// describe names the confinement a run gets.
func describe(abi int, iso Isolation, net NetMode) string {
	var b strings.Builder
	if iso == IsolationNamespaces {
		ns := "user,mnt,pid,net,ipc,uts"
		if net == NetAllow {
			ns = "user,mnt,pid,ipc,uts"
		}
		fmt.Fprintf(&b, "namespaces(%s) + ", ns)
	}
	parts := []string{"fs"}
	if iso == IsolationLandlock && net == NetDeny && abi >= 4 {
		parts = append(parts, "net")
	}
	if abi >= 6 {
		parts = append(parts, "scope")
	}
	fmt.Fprintf(&b, "landlock-abi%d: %s", abi, strings.Join(parts, "+"))
	if filterAvailable() {
		b.WriteString("; seccomp")
		if iso == IsolationLandlock && net == NetDeny {
			b.WriteString(" (no sockets)")
		} else {
			b.WriteString(" (socket families: " + socketFamilies + ")")
		}
	}
	switch net {
	case NetAllow:
		b.WriteString("; network allowed")
	case NetProxy:
		b.WriteString("; network only through the proxy")
	default:
		if iso == IsolationNamespaces {
			b.WriteString("; network: own loopback only")
		} else {
			b.WriteString("; network denied")
		}
	}
	if iso == IsolationNamespaces {
		b.WriteString("; userns counters capped")
	} else if filterAvailable() {
		b.WriteString("; no inotify/fanotify (no user namespace to cap them)")
	}
	b.WriteString("; no capabilities; rlimits+watchdog; ")
	b.WriteString(memoryMechanism(iso, net))
	return b.String()
}

func invalid(format string, a ...any) error {
	return result.New(result.InvalidRequest, fmt.Sprintf(format, a...))
}

// validate checks the Spec's shape; it does not re-decide policy.
func (s *Spec) validate() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return invalid("the command has no program name")
	}
	for _, a := range s.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid("an argument contains a NUL byte")
		}
	}
	for _, f := range []struct{ name, path string }{{"executable", s.Path}, {"working directory", s.Dir}} {
		if f.path == "" || !filepath.IsAbs(f.path) || strings.IndexByte(f.path, 0) >= 0 {
			return invalid("the %s must be an absolute path", f.name)
		}
	}
	if err := s.validateStatic(); err != nil {
		return err
	}
	rel, err := filepath.Rel(s.JailRoot, s.Dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return result.New(result.PathEscape, "the working directory is outside the jail")
	}
	return nil
}

// validateStatic checks the parts of the Spec that do not depend on the
// command: the trees, the network, the limits.
func (s *Spec) validateStatic() error {
	for _, f := range []struct{ name, path string }{
		{"jail root", s.JailRoot}, {"temporary directory", s.TempDir}, {"home directory", s.HomeDir},
	} {
		if f.path == "" || !filepath.IsAbs(f.path) || strings.IndexByte(f.path, 0) >= 0 {
			return invalid("the %s must be an absolute path", f.name)
		}
	}
	dirs := []struct{ name, path string }{
		{"jail root", s.JailRoot}, {"temporary directory", s.TempDir}, {"home directory", s.HomeDir},
	}
	for _, w := range s.WritePaths {
		dirs = append(dirs, struct{ name, path string }{"writable path", w})
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d.path) || strings.IndexByte(d.path, 0) >= 0 {
			return invalid("the %s must be an absolute path", d.name)
		}
		if fi, err := os.Stat(d.path); err != nil || !fi.IsDir() {
			return invalid("the %s does not exist or is not a directory", d.name)
		}
	}
	for _, r := range s.ReadPaths {
		if !filepath.IsAbs(r) || strings.IndexByte(r, 0) >= 0 {
			return invalid("the read path %q must be an absolute path", r)
		}
	}
	if s.PathEnv == "" {
		return invalid("the scrubbed PATH is empty")
	}
	if _, ok := s.Stdin.(*os.File); s.TTY && !ok {
		return invalid("a terminal (TTY) needs the terminal's file as Stdin")
	}
	if s.Timeout < 0 {
		return invalid("the timeout is negative")
	}
	if s.net() == NetProxy && (s.ProxySocket == "" || !filepath.IsAbs(s.ProxySocket)) {
		return invalid("network = proxy needs the absolute path of the proxy's socket")
	}
	l := s.Limits
	if l.MemoryMB < 0 || l.MaxProcesses < 0 || l.CPUSeconds < 0 || l.MaxFileMB < 0 || l.MaxOpenFiles < 0 || l.DiskMB < 0 {
		return invalid("a limit is negative")
	}
	return nil
}

// ProxyPort is the loopback port on which the helper relays to the proxy
// in the command's own network namespace (NetProxy).
const ProxyPort = 3128

// environ builds the child's whole environment: PATH, HOME, LANG, TMPDIR,
// the proxy variables (NetProxy), then the operator's extra pairs in order.
func (s *Spec) environ() ([]string, error) {
	lang := "C.UTF-8"
	var extra []string
	seen := map[string]bool{}
	for _, kv := range s.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsAny(name, "\x00") || strings.IndexByte(kv, 0) >= 0 {
			return nil, invalid("an extra environment entry is not NAME=VALUE")
		}
		switch name {
		case "PATH", "HOME", "TMPDIR":
			return nil, invalid("%s is set by the sandbox and cannot be passed as an extra variable", name)
		}
		if seen[name] {
			return nil, invalid("the extra environment variable %s is listed twice", name)
		}
		seen[name] = true
		if name == "LANG" {
			lang = kv[len("LANG="):]
			continue
		}
		extra = append(extra, kv)
	}
	env := []string{"PATH=" + s.PathEnv, "HOME=" + s.HomeDir, "LANG=" + lang, "TMPDIR=" + s.TempDir}
	if s.net() == NetProxy {
		u := fmt.Sprintf("http://127.0.0.1:%d", ProxyPort)
		for _, n := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			if !seen[n] {
				env = append(env, n+"="+u)
			}
		}
		for _, n := range []string{"NO_PROXY", "no_proxy"} {
			if !seen[n] {
				env = append(env, n+"=localhost,127.0.0.1")
			}
		}
	}
	return append(env, extra...), nil
}

// Run executes s and waits for it. It returns an error without running
// anything when the Spec is malformed (INVALID_REQUEST, PATH_ESCAPE) or the
// required confinement is unavailable (POLICY_DENIED). Once the child has
// started, the Outcome is always filled; the error is then nil for any exit
// status, a TIMEOUT *result.Error when the timeout or ctx's deadline fired,
// LIMIT_EXCEEDED when a limit stopped the command (Outcome.Limit names it),
// and OPERATION_FAILED when ctx was cancelled.
func Run(ctx context.Context, s Spec) (Outcome, error) {
	if err := s.validate(); err != nil {
		return Outcome{}, err
	}
	p, err := plan(s.Landlock, s.Isolation, s.net())
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{ExitCode: -1, Confinement: p.confinement}
	env, err := s.environ()
	if err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, result.Wrap(result.OperationFailed, "the command was cancelled before it started", err)
	}
	if s.Protect != nil && s.QuarantineDir == "" {
		return out, invalid("protected paths need a quarantine directory")
	}
	g, err := startGuard(&s, 0, 0)
	if err != nil {
		return out, err
	}
	if p.abi > 0 {
		out, err = runConfined(ctx, &s, p, env, out, g)
	} else {
		out, err = runPlain(ctx, &s, env, out)
	}
	g.finish(&out)
	return out, err
}

// limitError is the error of a run a limit stopped: it names the limit and
// the key that raises it.
func limitError(limit string, l Limits, timeout time.Duration) error {
	var what, key string
	switch limit {
	case LimitTimeout:
		return result.New(result.Timeout, fmt.Sprintf(
			"the command did not finish within %s; it and every process it started were killed "+
				"(limit: timeout; raise [terminal.limits] timeout_seconds)", timeout))
	case LimitMemory:
		what, key = fmt.Sprintf("used more than %d MiB of memory", l.MemoryMB), "memory_mb"
	case LimitProcesses:
		what, key = fmt.Sprintf("started more than %d processes and threads", l.MaxProcesses), "max_processes"
	case LimitCPU:
		what, key = fmt.Sprintf("used more than %d s of CPU time in one process", l.CPUSeconds), "cpu_seconds"
	case LimitFileSize:
		what, key = fmt.Sprintf("tried to write a file larger than %d MiB", l.MaxFileMB), "max_file_mb"
	case LimitOpenFiles:
		what, key = fmt.Sprintf("ran out of file descriptors (%d per process)", l.MaxOpenFiles), "max_open_files"
	case LimitDisk:
		what, key = fmt.Sprintf("wrote more than %d MiB to disk", l.DiskMB), "disk_mb"
	default:
		what, key = "hit a limit", "limits"
	}
	return result.New(result.LimitExceeded, fmt.Sprintf(
		"the command %s and was stopped; every process it started is gone (limit: %s; raise [terminal.limits] %s if the work needs more)",
		what, limit, key))
}

// runPlain runs the command as a direct child in its own process group,
// with no Landlock (mode "off", or "best-effort" where it is missing).
func runPlain(ctx context.Context, s *Spec, env []string, out Outcome) (Outcome, error) {
	if s.Gate != nil {
		if err := s.Gate(); err != nil {
			return out, err
		}
	}
	// Every descriptor the child gets is opened here.
	stdin, closeStdin, err := stdinFile(s.Stdin)
	if err != nil {
		return out, err
	}
	defer closeStdin()
	outR, outW, errR, errW, err := outputPipes()
	if err != nil {
		return out, err
	}
	defer outR.Close()
	defer errR.Close()

	files, sys := []*os.File{stdin, outW, errW}, sysProcAttr()
	if s.TTY {
		files = []*os.File{stdin, stdin, stdin}
		ttyAttr(sys)
	}
	cmd := &proc{path: s.Path, argv: s.Argv, env: env, dir: s.Dir, files: files, sys: sys}
	start := time.Now()
	c, err := launch(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		return out, err
	}

	if s.Started != nil {
		s.Started()
	}
	copied := make(chan struct{}, 2)
	go drain(s.Stdout, outR, copied)
	go drain(s.Stderr, errR, copied)

	var timer <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timer = t.C
	}
	var runErr error
	term := s.Terminate
	for term != nil {
		select {
		case <-term:
			term = nil
			c.signalGroup(syscall.SIGTERM)
		case <-c.exited:
			term = nil
		case <-ctx.Done():
			term = nil
		}
	}
	select {
	case <-c.exited:
	case <-timer:
		out.TimedOut, out.Limit = true, LimitTimeout
		c.killGroup()
		<-c.exited
		runErr = limitError(LimitTimeout, s.Limits, s.Timeout)
	case <-ctx.Done():
		c.killGroup()
		<-c.exited
		runErr = ctxError(ctx, &out)
	}
	// The direct child has exited but is not reaped yet, so its pid, which
	// is also the group's id, cannot have been reused: the group kill below
	// reaches only what the child left behind.
	c.killGroup()
	state, werr := c.reap()
	out.Duration = time.Since(start)
	finishDrain(outR, errR, copied)

	if state == nil {
		if runErr == nil {
			runErr = result.Wrap(result.InternalError, "the command's exit status could not be collected", werr)
		}
		return out, runErr
	}
	out.ExitCode = state.ExitCode()
	out.Signal = signalOf(state)
	return out, runErr
}

// ctxError is the error of a run ended by ctx.
func ctxError(ctx context.Context, out *Outcome) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		out.TimedOut, out.Limit = true, LimitTimeout
		return result.Wrap(result.Timeout,
			"the command ran past the request's deadline; it and every process it started were killed", ctx.Err())
	}
	return result.Wrap(result.OperationFailed,
		"the command was cancelled; it and every process it started were killed", ctx.Err())
}

// outputPipes makes the stdout and stderr pipes.
func outputPipes() (outR, outW, errR, errW *os.File, err error) {
	outR, outW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, result.Wrap(result.InternalError, "the sandbox could not create the output pipes", err)
	}
	errR, errW, err = os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, result.Wrap(result.InternalError, "the sandbox could not create the output pipes", err)
	}
	return outR, outW, errR, errW, nil
}

// finishDrain waits for both drains, cutting them off drainGrace after
// the call (every process of the command is dead by now).
func finishDrain(outR, errR *os.File, copied chan struct{}) {
	grace := time.NewTimer(drainGrace)
	defer grace.Stop()
	for n := 0; n < 2; {
		select {
		case <-copied:
			n++
		case <-grace.C:
			now := time.Now()
			_ = outR.SetReadDeadline(now)
			_ = errR.SetReadDeadline(now)
		}
	}
}

// drain copies r to w until EOF or a read error (a deadline set after the
// grace period). A failing writer is dropped and the pipe still read, so a
// child is never blocked by a full pipe.
func drain(w io.Writer, r *os.File, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}

// The refusals of a command that could not be started.
var (
	errNoExecutable = result.New(result.NotFound, "the executable or the working directory does not exist")
	errExecDenied   = result.New(result.OperationFailed,
		"the executable could not be started: permission denied (under Landlock only files beneath the "+
			"read-only system paths may be executed, never files in the jail, HOME or TMPDIR)")
	errStart = result.New(result.OperationFailed, "the command could not be started")
)

// startError turns a failed start into a client-safe error. An OS error is
// classified by result's errno table: what it calls NOT_FOUND is
// errNoExecutable, a permission error is errExecDenied (with the Landlock
// hint), and anything else is errStart, worded by the table where the
// table's code is errStart's.
func startError(err error) error {
	var re *result.Error
	if errors.As(err, &re) {
		return err
	}
	switch {
	case result.CodeOf(err) == result.NotFound:
		return errNoExecutable.Wrap(err)
	case errors.Is(err, os.ErrPermission):
		return errExecDenied.Wrap(err)
	}
	return errStart.FromOS(err)
}

// proc is a process to start, as os/exec would describe it. The package
// starts processes with os.StartProcess, not os/exec: the helper is this
// binary re-executed, and every package this one imports is initialised
// before the helper can run; os/exec (like net and os/signal) is one the
// runtime initialises late.
type proc struct {
	path  string
	argv  []string
	env   []string // never nil: nil would pass the server's environment on
	dir   string
	files []*os.File
	sys   *syscall.SysProcAttr

	p     *os.Process
	state *os.ProcessState
}

// start starts the process.
func (c *proc) start() error {
	env := c.env
	if env == nil {
		env = []string{}
	}
	p, err := os.StartProcess(c.path, c.argv, &os.ProcAttr{Dir: c.dir, Env: env, Files: c.files, Sys: c.sys})
	if err != nil {
		return err
	}
	c.p = p
	return nil
}

// wait reaps the process.
func (c *proc) wait() (*os.ProcessState, error) {
	st, err := c.p.Wait()
	c.state = st
	return st, err
}

// ViewShm is the directory every view gives the command as its own
// shared-memory tmpfs, emptied between the commands a kept helper serves.
const ViewShm = "/dev/shm"

// UnderViewShm returns those of paths (a jail, the state directory) that
// lie under ViewShm once their symbolic links are resolved. Such a path is
// mounted at its own name in the view, so the view's /dev/shm holds its
// mount points, which a kept helper cannot remove: no helper is kept
// (helper.resetForNext) and every command starts its own, about 7 ms more
// per command on a 2-vCPU machine. The server warns at start.
func UnderViewShm(paths ...string) []string {
	var under []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if p = filepath.Clean(p); p == ViewShm || strings.HasPrefix(p, ViewShm+"/") {
			under = append(under, p)
		}
	}
	return under
}
