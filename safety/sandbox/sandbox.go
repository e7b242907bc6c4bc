// Package sandbox runs one already-approved argv as a confined child process:
// the process boundary of Bastion (DESIGN §4b).
//
// It refuses to:
//   - run anything through a shell: the argv is executed as given;
//   - pass the server's environment on: the child sees exactly PATH, HOME,
//     LANG, TMPDIR and the NAME=VALUE pairs the caller lists;
//   - give the child the server's stdin (the MCP stream): stdin is /dev/null;
//   - leave processes behind: the child runs in its own session and process
//     group, and the whole group is killed with SIGKILL on timeout and again
//     right after the direct child exits, before it is reaped;
//   - wait for ever on pipes a stray process still holds: once the group is
//     dead, output is drained for a short grace period and the pipes closed;
//   - run unconfined when confinement was required: with Mode "required" and
//     no usable Landlock, Run and Check answer POLICY_DENIED.
//
// On Linux the child is confined by Landlock before it executes the target.
// Writes are allowed only beneath JailRoot, TempDir and HomeDir; reads only
// there and beneath ReadPaths (DefaultReadPaths when empty); files may be
// executed only beneath ReadPaths, never from the writable trees; device
// nodes cannot be created; TCP bind and connect are denied unless
// Spec.Network is set (Landlock ABI 4 and later); signals and abstract UNIX
// sockets are scoped to the child's own domain (ABI 6 and later).
//
// Landlock's TCP rights miss Multipath TCP and SCTP's setsockopt-based
// connect (landlock-lsm/linux#54, #40), so when the network is denied a
// seccomp filter on the same thread also refuses MPTCP and SCTP sockets and
// io_uring (amd64 and arm64; elsewhere the confinement string says so).
//
// Known limits, stated where they apply: Landlock does not restrict UDP or
// raw sockets on the kernels this was written against, so Network=false
// means "no TCP"; a descendant that leaves the process group with setsid(2)
// or setpgid(2) escapes the group kill (it stays Landlock-confined, and its
// pipes are closed after the grace period); the child keeps the server's
// user and capabilities (Landlock confines root too, but other root powers
// remain). Off Linux there is no Landlock and no group kill: "required"
// refuses, "best-effort" and "off" run the child with only the direct child
// killed on timeout.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
	"/etc/ca-certificates", "/etc/gitconfig", "/etc/magic", "/etc/mime.types",
	"/dev/zero", "/dev/random", "/dev/urandom",
}

// Spec is one run: what to execute, where, and under which confinement.
// The caller has already decided the command is allowed; Run decides only
// how it runs.
type Spec struct {
	// Path is the absolute path of the resolved executable.
	Path string
	// Argv is the argument vector; Argv[0] is the program's name.
	Argv []string
	// Dir is the absolute working directory, inside JailRoot.
	Dir string
	// JailRoot is the writable tree the command works in.
	JailRoot string
	// TempDir is a private writable temporary directory, outside the jail;
	// TMPDIR points at it.
	TempDir string
	// HomeDir is a private HOME outside the jail (never the user's home).
	HomeDir string
	// ReadPaths are the read-only trees; DefaultReadPaths when empty.
	// Files beneath them may also be executed.
	ReadPaths []string
	// Env holds extra NAME=VALUE pairs the operator allowed. LANG may be
	// overridden here (default C.UTF-8); PATH, HOME and TMPDIR may not.
	Env []string
	// PathEnv is the scrubbed PATH value the child sees.
	PathEnv string
	// Network allows TCP bind and connect. When false, Landlock denies
	// them (ABI 4 and later).
	Network bool
	// Landlock is the confinement mode; empty means ModeRequired.
	Landlock Mode
	// Timeout bounds the run; zero means only ctx bounds it.
	Timeout time.Duration
	// Stdout and Stderr receive the child's output until EOF (nil discards).
	// The caller passes redacting, capping writers; a writer that fails is
	// skipped and the pipe still drained, so the child never blocks on it.
	Stdout, Stderr io.Writer
}

// Outcome is what happened to a run that started.
type Outcome struct {
	// ExitCode is the child's exit status, -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the child ("SIGKILL"), if any.
	Signal string
	// TimedOut is true when the timeout (or ctx's deadline) fired.
	TimedOut bool
	// Duration runs from start to the child being reaped.
	Duration time.Duration
	// Confinement describes what confined the child, e.g.
	// "landlock-abi7: fs+net+scope; seccomp: mptcp,sctp,io_uring denied",
	// "landlock-abi7: fs+scope (network allowed)" or
	// "none (best-effort: landlock unavailable)".
	Confinement string
}

// drainGrace is how long output is still read after the process group has
// been killed and the direct child reaped. Members of the group are dead by
// then and their pipe ends closed within microseconds; the grace only bounds
// how long a process that left the group can keep the call waiting.
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

// errUnavailable is the refusal of "required" mode where Landlock is missing.
var errUnavailable = result.New(result.PolicyDenied,
	`landlock = "required" but this system has no usable Landlock (Linux 5.13 or later with landlock enabled in the lsm= list); `+
		`nothing will run. Set landlock = "best-effort" to run unconfined on such systems`)

// Check is the startup check for mode: it refuses "required" where Landlock
// is unavailable (POLICY_DENIED) and otherwise describes the confinement
// commands will get, for logs and explain_command.
func Check(mode Mode) (string, error) {
	m, err := mode.normalize()
	if err != nil {
		return "", err
	}
	abi, perr := probe()
	if m == ModeOff {
		return "none (landlock off)", nil
	}
	if abi <= 0 {
		if m == ModeRequired {
			if perr != nil {
				return "", result.Wrap(errUnavailable.Code, errUnavailable.Reason, perr)
			}
			return "", errUnavailable
		}
		return "none (best-effort: landlock unavailable)", nil
	}
	return describe(abi, false), nil
}

// plan decides which ABI to confine with (0: none) and describes it.
func plan(mode Mode, network bool) (int, string, error) {
	m, err := mode.normalize()
	if err != nil {
		return 0, "", err
	}
	if m == ModeOff {
		return 0, "none (landlock off)", nil
	}
	abi, perr := probe()
	if abi <= 0 {
		if m == ModeRequired {
			if perr != nil {
				return 0, "", result.Wrap(errUnavailable.Code, errUnavailable.Reason, perr)
			}
			return 0, "", errUnavailable
		}
		return 0, "none (best-effort: landlock unavailable)", nil
	}
	if !network && abi < 4 && m == ModeRequired {
		return 0, "", result.New(result.PolicyDenied, fmt.Sprintf(
			`network = "deny" needs Landlock ABI 4 (Linux 6.7) but this kernel has ABI %d; nothing will run. `+
				`Use landlock = "best-effort" to run with filesystem confinement only`, abi))
	}
	return abi, describe(abi, network), nil
}

// describe names the confinement a given ABI gives.
func describe(abi int, network bool) string {
	parts := []string{"fs"}
	note := ""
	switch {
	case network:
		note = " (network allowed)"
	case abi >= 4:
		parts = append(parts, "net")
		if netFilterAvailable() {
			note = "; seccomp: mptcp,sctp,io_uring denied"
		} else {
			note = " (MPTCP and SCTP sockets not blocked on this architecture)"
		}
	default:
		note = " (network not confined: needs ABI 4)"
	}
	if abi >= 6 {
		parts = append(parts, "scope")
	}
	return fmt.Sprintf("landlock-abi%d: %s%s", abi, strings.Join(parts, "+"), note)
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
	for _, f := range []struct{ name, path string }{
		{"executable", s.Path}, {"working directory", s.Dir}, {"jail root", s.JailRoot},
		{"temporary directory", s.TempDir}, {"home directory", s.HomeDir},
	} {
		if f.path == "" || !filepath.IsAbs(f.path) || strings.IndexByte(f.path, 0) >= 0 {
			return invalid("the %s must be an absolute path", f.name)
		}
	}
	rel, err := filepath.Rel(s.JailRoot, s.Dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return result.New(result.PathEscape, "the working directory is outside the jail")
	}
	for _, d := range []struct{ name, path string }{
		{"jail root", s.JailRoot}, {"temporary directory", s.TempDir}, {"home directory", s.HomeDir},
	} {
		if fi, err := os.Stat(d.path); err != nil || !fi.IsDir() {
			return invalid("the %s does not exist or is not a directory", d.name)
		}
	}
	if s.PathEnv == "" {
		return invalid("the scrubbed PATH is empty")
	}
	if s.Timeout < 0 {
		return invalid("the timeout is negative")
	}
	return nil
}

// environ builds the child's whole environment: PATH, HOME, LANG, TMPDIR,
// then the operator's extra pairs in order.
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
	return append(env, extra...), nil
}

// Run executes s and waits for it. It returns an error without running
// anything when the Spec is malformed (INVALID_REQUEST, PATH_ESCAPE) or the
// required confinement is unavailable (POLICY_DENIED). Once the child has
// started, the Outcome is always filled; the error is then nil for any exit
// status, a TIMEOUT *result.Error when the timeout or ctx's deadline fired,
// and OPERATION_FAILED when ctx was cancelled.
func Run(ctx context.Context, s Spec) (Outcome, error) {
	if err := s.validate(); err != nil {
		return Outcome{}, err
	}
	abi, confinement, err := plan(s.Landlock, s.Network)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{ExitCode: -1, Confinement: confinement}
	env, err := s.environ()
	if err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, result.Wrap(result.OperationFailed, "the command was cancelled before it started", err)
	}

	// Every descriptor the child gets is opened here, before any thread is
	// confined, so that opening them is never subject to Landlock.
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		return out, result.Wrap(result.InternalError, "the sandbox could not open /dev/null for stdin", err)
	}
	defer stdin.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return out, result.Wrap(result.InternalError, "the sandbox could not create the output pipes", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return out, result.Wrap(result.InternalError, "the sandbox could not create the output pipes", err)
	}
	defer outR.Close()
	defer errR.Close()

	cmd := &exec.Cmd{
		Path:        s.Path,
		Args:        s.Argv,
		Env:         env,
		Dir:         s.Dir,
		Stdin:       stdin,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: sysProcAttr(),
	}
	start := time.Now()
	c, err := launch(&s, abi, cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		return out, err
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
	select {
	case <-c.exited:
	case <-timer:
		out.TimedOut = true
		c.killGroup()
		<-c.exited
		runErr = result.New(result.Timeout, fmt.Sprintf(
			"the command did not finish within %s; it and every process in its group were killed", s.Timeout))
	case <-ctx.Done():
		c.killGroup()
		<-c.exited
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			out.TimedOut = true
			runErr = result.Wrap(result.Timeout,
				"the command ran past the request's deadline; it and every process in its group were killed", ctx.Err())
		} else {
			runErr = result.Wrap(result.OperationFailed,
				"the command was cancelled; it and every process in its group were killed", ctx.Err())
		}
	}
	// The direct child has exited but is not reaped yet, so its pid, which
	// is also the group's id, cannot have been reused: the group kill below
	// reaches only what the child left behind.
	c.killGroup()
	state, werr := c.reap()
	out.Duration = time.Since(start)

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

// startError turns a failed start into a client-safe error.
func startError(err error) error {
	var re *result.Error
	if errors.As(err, &re) {
		return err
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return result.Wrap(result.NotFound, "the executable or the working directory does not exist", err)
	case errors.Is(err, os.ErrPermission):
		return result.Wrap(result.OperationFailed,
			"the executable could not be started: permission denied (under Landlock only files beneath the "+
				"read-only system paths may be executed, never files in the jail, HOME or TMPDIR)", err)
	}
	return result.Wrap(result.OperationFailed, "the command could not be started", err)
}
