package config

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// SandboxGuarantee is the plain statement check prints for the sandbox
// profile.
const SandboxGuarantee = "the kernel boundary (namespaces + Landlock + seccomp + limits), not the argument rules, " +
	"is the guarantee: allowlisted shells and interpreters can run any program inside it"

// CommandPolicy builds the command policy of [terminal]: its allowlist,
// ask list, denylist and rules, Sandboxed when the profile is "sandbox".
func (t Terminal) CommandPolicy() command.Policy {
	cp := command.Policy{Allow: t.Allowlist.Commands, Ask: t.Ask.Commands, Deny: t.Denylist.Commands, Sandboxed: t.Sandboxed()}
	for _, r := range t.Rules {
		cp.Rules = append(cp.Rules, command.Rule{Command: r.Command, DenyArgs: r.DenyArgs, AskArgs: r.AskArgs,
			LongOptions: r.LongOptions, Reason: r.Reason})
	}
	return cp
}

// terminal adds terminald's settings, warnings and errors to e.
func (e *Effective) terminal(t Terminal, set func(k, format string, a ...any)) {
	t.Sandbox.AllowedHosts = append([]string(nil), t.Sandbox.AllowedHosts...) // Validate lower-cases in place
	if err := t.Validate(); err != nil {
		e.Errorf("%s", err)
	}
	terminalSettings(t, set)
	cp := t.CommandPolicy()
	if err := cp.Validate(); err != nil {
		for _, r := range reasons(err) {
			e.Errorf("%s", r)
		}
	}
	for _, p := range t.startProblems() {
		e.Errorf("%s", p)
	}
	e.terminalWarnings(t)
}

// terminalSettings sets the lines of terminald's effective settings.
func terminalSettings(t Terminal, set func(k, format string, a ...any)) {
	set("terminal.profile", "%s", t.EffectiveProfile())
	if t.Sandboxed() {
		set("terminal.guarantee", "%s", SandboxGuarantee)
	}
	set("terminal.allowlist", "%d command(s)", len(t.Allowlist.Commands))
	if len(t.Ask.Commands) == 0 {
		set("terminal.ask", "none (no command asks a person on every run)")
	} else {
		set("terminal.ask", "%d command(s), every run approved by a person: %s", len(t.Ask.Commands), list(t.Ask.Commands))
	}
	set("terminal.denylist", "%d command(s)", len(t.Denylist.Commands))
	set("terminal.rules", "%d argument rule(s)", len(t.Rules))
	for i, r := range t.Rules {
		if len(r.AskArgs) > 0 {
			set(fmt.Sprintf("terminal.rules[%d].ask_args", i), "%s: a person approves %s", r.Command, list(r.AskArgs))
		}
	}
	l := t.Limits.WithDefaults()
	for _, c := range []struct {
		key      string
		set, eff int
		unit     string
	}{
		{"timeout_seconds", t.Limits.TimeoutSeconds, l.TimeoutSeconds, "s"},
		{"max_output_bytes", t.Limits.MaxOutputBytes, l.MaxOutputBytes, " bytes"},
		{"memory_mb", t.Limits.MemoryMB, l.MemoryMB, " MiB"},
		{"max_processes", t.Limits.MaxProcesses, l.MaxProcesses, " processes and threads"},
		{"cpu_seconds", t.Limits.CPUSeconds, l.CPUSeconds, "s of CPU"},
		{"max_file_mb", t.Limits.MaxFileMB, l.MaxFileMB, " MiB per file"},
		{"max_open_files", t.Limits.MaxOpenFiles, l.MaxOpenFiles, " descriptors per process"},
		{"max_concurrent", t.Limits.MaxConcurrent, l.MaxConcurrent, " commands at once"},
		{"max_queued", t.Limits.MaxQueued, l.MaxQueued, " calls waiting"},
		{"disk_mb", t.Limits.DiskMB, l.DiskMB, " MiB written"},
	} {
		v := fmt.Sprintf("%d%s", c.eff, c.unit)
		if c.set == 0 {
			v += " (default)"
		}
		set("terminal.limits."+c.key, "%s", v)
	}
	sess := t.Sessions.WithDefaults()
	set("terminal.sessions", "at most %d live, each ended after %d idle minutes or %d minutes in all",
		sess.Max, sess.IdleMinutes, sess.MaxLifetimeMinutes)
	if sess.PublishPorts {
		set("terminal.sessions.publish_ports", "true: a port a session listens on is reachable on this machine's 127.0.0.1")
	}
	s := t.Sandbox
	set("terminal.sandbox.isolation", "%s", s.EffectiveIsolation())
	set("terminal.sandbox.landlock", "%s", s.EffectiveLandlock())
	if s.EffectiveNetwork() == NetworkProxy {
		hosts := s.ProxyHosts()
		set("terminal.sandbox.network", "proxy, %d allowed host(s) %s", len(hosts), list(hosts))
		if len(s.Registries) > 0 {
			set("terminal.sandbox.registries", "%s", list(s.Registries))
		}
	} else {
		set("terminal.sandbox.network", "%s", s.EffectiveNetwork())
	}
	set("terminal.sandbox.caches", "%s", list(s.Caches))
	if s.GitIdentity {
		set("terminal.sandbox.git_identity", "true: commands get your git user.name and user.email (read at start), nothing else of your git configuration")
	}
	if s.ShareCaches {
		set("terminal.sandbox.share_caches", "true: one set of caches for every jail")
	}
	if len(s.ReadPaths) == 0 {
		set("terminal.sandbox.read_paths", "the sandbox's default system set (%d paths)", len(sandbox.DefaultReadPaths))
	} else {
		set("terminal.sandbox.read_paths", "%d path(s), replacing the default system set", len(s.ReadPaths))
	}
	set("terminal.env.path", "%s", list(t.Env.Path))
	if t.State.Dir != "" {
		set("terminal.state.dir", "%s", t.State.Dir)
	}
	if t.RawOutput {
		set("terminal.raw_output", "true: stdout and stderr reach the client with their terminal control characters")
	} else {
		set("terminal.raw_output", "false (default): terminal control characters are shown as visible escapes")
	}
}

// terminalWarnings adds what an operator of terminald should know but
// that does not stop it.
func (e *Effective) terminalWarnings(t Terminal) {
	if !t.Sandboxed() {
		denied := map[string]bool{}
		for _, c := range t.Denylist.Commands {
			denied[command.Name(c)] = true
		}
		for _, c := range t.Allowlist.Commands {
			if _, never := command.Never(c); !never && isInterpreter(c) && !denied[command.Name(c)] {
				e.Warnf("allowlisted interpreter %q: it runs whatever program its arguments name, so the command policy no longer bounds what runs", c)
			}
		}
	}
	s := t.Sandbox
	switch s.EffectiveNetwork() {
	case NetworkAllow:
		e.Warnf("network = \"allow\": commands may open network connections (exfiltration, downloads)")
	case NetworkProxy:
		for _, h := range s.AllowedHosts {
			if local(h) {
				e.Warnf("allowed_hosts entry %q is this machine: through the proxy, commands reach every service listening on it", h)
			}
		}
	}
	if s.ShareCaches && len(s.Caches) > 0 {
		e.Warnf("share_caches = true: every jail using this state directory shares the caches %s; a command of one can plant what another's builds use", list(s.Caches))
	}
	if s.EffectiveIsolation() == IsolationLandlock {
		e.Warnf("isolation = \"landlock\": commands run without namespaces: they can probe host paths, cannot change file modes, times or owners anywhere, and a process they start can outlive a helper killed by force")
	}
	for _, u := range t.Unrunnable() {
		e.Warnf("%s", u.Why)
	}
	switch s.EffectiveLandlock() {
	case LandlockOff:
		e.Warnf("landlock = \"off\": commands are not kernel-confined to the jail; only the command policy stands between them and your files")
	case LandlockBestEffort:
		e.Warnf("landlock = \"best-effort\": on a kernel without Landlock commands run unconfined instead of being refused")
	}
	if runtime.GOOS != "linux" {
		e.Warnf("this platform (%s) has no Landlock: terminald cannot kernel-confine commands here", runtime.GOOS)
	}
}

// local reports whether a host pattern names this machine.
func local(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// reasons returns the reason of each error joined in err.
func reasons(err error) []string {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		_, r := result.Classify(e)
		out = append(out, r)
	}
	return out
}

// UnrunnableCommand is an allowlisted (or asked-about) command the
// sandbox cannot run.
type UnrunnableCommand struct {
	Name string // as allowlisted
	Path string // what it resolves to on [terminal.env] path ("" if nothing)
	Why  string // the warning, naming the key that fixes it
}

// Unrunnable lists the allowlisted commands, and those on [terminal.ask]
// not also allowlisted, that are not on [terminal.env] path, or (on Linux)
// resolve to a program outside the read paths, which the sandbox cannot
// execute. check and terminald's start-up both warn about them, each with
// its next step: where this machine has the program (the server's PATH,
// ~/.cargo/bin, ~/.local/bin, ~/go/bin...) and the [terminal.env] path
// entry and read_paths trees to add, or that it is not installed.
func (t Terminal) Unrunnable() []UnrunnableCommand {
	path := t.Env.Path
	if len(path) == 0 {
		path = command.DefaultPath
	}
	var out []UnrunnableCommand
	names := slices.Clone(t.Allowlist.Commands)
	for _, c := range t.Ask.Commands {
		if !slices.ContainsFunc(names, func(n string) bool { return command.Name(n) == command.Name(c) }) {
			names = append(names, c)
		}
	}
	for i, c := range names {
		what := "allowlisted command"
		if i >= len(t.Allowlist.Commands) {
			what = "command on [terminal.ask]"
		}
		exe, err := command.Resolve(c, path)
		switch {
		case err != nil:
			out = append(out, UnrunnableCommand{c, "", missingTool(what, c, path, t.Sandbox.ReadPaths)})
		case runtime.GOOS == "linux" && !sandbox.Covered(exe, t.Sandbox.ReadPaths):
			out = append(out, UnrunnableCommand{c, exe, outsideView(what, c, exe, t.Sandbox.ReadPaths)})
		}
	}
	return out
}
