package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/bastion-mcp/bastion/safety/command"
)

// Servers are the server names Effective knows.
var Servers = []string{"sweepd", "terminald", "organizerd", "radar"}

// Setting is one line of the effective configuration.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Effective is what one server would run with: its settings after the
// policy file, environment overrides and flags are combined, plus the
// problems that would stop it (Errors) and the ones an operator should know
// about (Warnings). It is what "<server> check" prints.
type Effective struct {
	Server     string    `json:"server"`
	PolicyFile string    `json:"policy_file"`
	Settings   []Setting `json:"settings"`
	Warnings   []string  `json:"warnings"`
	Errors     []string  `json:"errors"`
}

// CheckOptions are inputs to Effective that do not come from the policy.
type CheckOptions struct {
	// Roots are extra sweep roots given on the command line (sweepd --root).
	Roots []string
	// StateDir returns the default state directory (audit.DefaultDir); nil
	// means "$XDG_STATE_HOME/bastion, else ~/.local/state/bastion".
	StateDir func() (string, error)
}

// Effective computes server's effective configuration. It never touches the
// filesystem beyond lstat of roots and state directories.
func (p *Policy) Effective(server string, o CheckOptions) *Effective {
	e := &Effective{Server: server, PolicyFile: p.File, Warnings: []string{}, Errors: []string{}}
	if e.PolicyFile == "" {
		e.PolicyFile = "(none)"
	}
	stateDir := o.StateDir
	if stateDir == nil {
		stateDir = defaultStateDir
	}
	var roots []string
	switch server {
	case "sweepd":
		roots = e.sweepd(p.Sweep, o.Roots)
	case "terminald":
		roots = e.terminald(p.Terminal)
	case "organizerd":
		roots = e.organizerd(p.Organizer)
	case "radar":
		e.radar(p.Radar)
	default:
		e.Errorf("unknown server %q (want one of %s)", server, strings.Join(Servers, ", "))
		return e
	}
	if server != "radar" {
		e.audit(p, server, stateDir, roots)
	}
	e.leaving(p, server)
	if server != "radar" {
		if plan, err := p.Telemetry.Resolve(nil); err != nil {
			e.Errorf("%s", err)
		} else {
			e.set("telemetry", "%s", plan)
		}
	}
	if len(p.Redaction.Patterns) > 0 || p.Redaction.Entropy {
		e.set("redaction", "%d extra pattern(s), entropy %v", len(p.Redaction.Patterns), p.Redaction.Entropy)
	}
	if runtime.GOOS != "linux" && server != "radar" {
		e.Warnf("this platform (%s) has no openat2: paths are resolved with the portable os.Root fallback (see docs/guarantees.md)", runtime.GOOS)
	}
	return e
}

// leaving warns about each relative path of the policy, of a key server
// reads, that leads out of the policy file's folder: it is right where
// the file is, and wrong once the file is copied elsewhere (the example
// policies' "../.demo/..." paths).
func (e *Effective) leaving(p *Policy, server string) {
	section := map[string]string{"sweepd": "sweep.", "terminald": "terminal.", "organizerd": "organizer."}[server]
	for _, l := range p.leaves {
		if !(strings.HasPrefix(l.key, "radar.") || (section != "" && (l.key == "audit_log" || strings.HasPrefix(l.key, section)))) {
			continue
		}
		line := ""
		if n := p.keys.line(l.key); n > 0 {
			line = fmt.Sprintf(" (line %d)", n)
		}
		e.Warnf("%s = %q%s is relative, so it is taken from the policy file's folder %s and leads out of it, to %s: "+
			"a copy of the policy elsewhere points somewhere else; write an absolute path or one starting with ~/",
			l.key, l.written, line, filepath.Dir(p.File), l.resolved)
	}
}

// set adds one setting.
func (e *Effective) set(k, format string, a ...any) {
	e.Settings = append(e.Settings, Setting{k, fmt.Sprintf(format, a...)})
}

// sweepd checks sweepd's section plus the --root flags, and returns the
// roots, made absolute.
func (e *Effective) sweepd(s Sweep, extra []string) []string {
	roots := append(append([]string{}, s.Roots...), extra...)
	if len(roots) == 0 {
		e.Errorf("no root: pass --root DIR or set [sweep] roots")
	}
	for i, r := range roots {
		if abs, err := filepath.Abs(r); err == nil {
			roots[i] = abs
		}
		e.set("sweep.root", "%s", roots[i])
		e.checkRoot("sweep root", roots[i])
	}
	e.set("sweep.ticket_ttl", "%s", s.TTL())
	mf := s.MaxFinds
	if mf == 0 {
		mf = 500
	}
	e.set("sweep.max_finds", "%d", mf)
	e.set("sweep.disable", "%d kind(s) %s", len(s.Disable), list(s.Disable))
	e.set("sweep.allow_tracked", "%t", s.AllowTracked)
	e.set("sandbox", "none needed: sweepd runs no programs")
	return roots
}

// oneRoot checks the one root of a server whose setting key
// ("section.field") holds root and whose environment variable is env: an
// error when it is unset, else it is recorded and checked (checkRoot) and
// returned as the server's roots.
func (e *Effective) oneRoot(what, key, env, root string) []string {
	if root == "" {
		section, field, _ := strings.Cut(key, ".")
		e.Errorf("no %s: set [%s] %s or %s", what, section, field, env)
		return nil
	}
	e.set(key, "%s", root)
	e.checkRoot(what, root)
	return []string{root}
}

// terminald checks terminald's section and returns its root, the jail.
func (e *Effective) terminald(t Terminal) []string {
	roots := e.oneRoot("jail root", "terminal.jail_root", EnvJailRoot, t.JailRoot)
	e.terminal(t, e.set)
	if t.State.Dir != "" && t.JailRoot != "" && IsWithin(t.State.Dir, t.JailRoot) {
		e.Errorf("terminal.state.dir %s lies inside the jail root %s", t.State.Dir, t.JailRoot)
	}
	return roots
}

// organizerd checks organizerd's section and returns its root, the
// workspace.
func (e *Effective) organizerd(o Organizer) []string {
	roots := e.oneRoot("workspace root", "organizer.workspace_root", EnvWorkspaceRoot, o.WorkspaceRoot)
	keys := make([]string, 0, len(o.Categories))
	for k := range o.Categories {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.set("organizer.categories", "%d %s", len(keys), list(keys))
	e.set("organizer.skip", "%d rule(s)", len(o.Skip))
	e.set("organizer.recent_seconds", "%s", orDefault(o.RecentSeconds, "s"))
	e.set("sandbox", "none needed: organizerd runs no programs")
	if o.Journal != "" {
		e.set("organizer.journal", "%s", o.Journal)
		if o.WorkspaceRoot != "" {
			if err := CheckOutside("journal", o.Journal, []string{o.WorkspaceRoot}); err != nil {
				e.Errorf("%s", err)
			}
		}
	} else {
		e.set("organizer.journal", "(server default)")
	}
	for _, s := range o.Skip {
		if s.Layer != "protection" && s.Layer != "restraint" {
			e.Errorf("organizer.skip %q: layer must be \"protection\" or \"restraint\", not %q", s.Name, s.Layer)
		}
	}
	return roots
}

// radar checks the radar's section.
func (e *Effective) radar(r Radar) {
	e.set("radar.rule_files", "%d %s", len(r.RuleFiles), list(r.RuleFiles))
	e.set("radar.scan_bytes", "%s", orDefault(r.ScanBytes, " bytes"))
	e.set("radar.summary_max_entries", "%s", orDefault(r.SummaryMaxEntries, " entries"))
	for _, f := range r.RuleFiles {
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
			e.Errorf("radar rule file %s is not a readable regular file", f)
		}
	}
}

// audit checks a server's audit settings: the fail mode, and a log path
// outside every root; it shows the rotation in effect.
func (e *Effective) audit(p *Policy, server string, stateDir func() (string, error), roots []string) {
	e.set("audit_fail_mode", "%s", or(p.AuditFailMode, "closed"))
	if p.AuditFailMode == "open" {
		e.Warnf("audit_fail_mode = \"open\": actions proceed when the audit log cannot be written, so some may go unrecorded")
	}
	ap, err := p.AuditPath(server, stateDir)
	if err != nil {
		e.Errorf("%s", err)
		return
	}
	e.set("audit_log", "%s", ap)
	e.set("audit.max_mb", "%d", p.Audit.MaxBytes()>>20)
	e.set("audit.keep", "%d", p.Audit.Files())
	if err := CheckOutside("audit log", ap, roots); err != nil {
		e.Errorf("%s", err)
	}
}

// Errorf records a problem that would stop the server from starting.
func (e *Effective) Errorf(format string, a ...any) {
	e.Errors = append(e.Errors, fmt.Sprintf(format, a...))
}

// Warnf records something the operator should know but that does not stop
// the server.
func (e *Effective) Warnf(format string, a ...any) {
	e.Warnings = append(e.Warnings, fmt.Sprintf(format, a...))
}

// checkRoot adds errors for a root that is missing, not a directory or a
// symlink, and a warning for a root that is /, a home directory or a parent
// of one.
func (e *Effective) checkRoot(what, root string) {
	fi, err := os.Lstat(root)
	switch {
	case err != nil:
		e.Errorf("%s %s does not exist or cannot be read", what, root)
	case fi.Mode()&os.ModeSymlink != 0:
		e.Errorf("%s %s is a symbolic link; name the directory it points to", what, root)
	case !fi.IsDir():
		e.Errorf("%s %s is not a directory", what, root)
	}
	if w := broadRoot(root); w != "" {
		e.Warnf("%s %s is %s: everything beneath it is in reach; prefer a project directory such as ~/code", what, root, w)
	}
}

// broadRoot says why root is too broad, or "".
func broadRoot(root string) string {
	c := filepath.Clean(root)
	if filepath.Dir(c) == c {
		return "the filesystem root"
	}
	var homes []string
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		homes = append(homes, filepath.Clean(h))
	}
	for _, h := range homes {
		if c == h {
			return "your home directory"
		}
		if IsWithin(h, c) {
			return "a parent of your home directory"
		}
	}
	if c == "/root" {
		return "root's home directory"
	}
	for _, base := range []string{"/home", "/Users"} {
		if c == base {
			return "the directory of all home directories"
		}
		if filepath.Dir(c) == base {
			return "a home directory"
		}
	}
	return ""
}

// isInterpreter reports whether c (any spelling; it is normalised) runs
// code it is given: a shell, wrapper, interpreter or tool of
// command.Programs. In the allowlist profile, check warns about those the
// command policy does not already refuse (the tools: make, npm, pip, vim,
// docker...); the sandbox profile allows them all.
func isInterpreter(c string) bool {
	_, ok := command.Lookup(c)
	return ok
}

func list(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefault(n int, unit string) string {
	if n == 0 {
		return "(server default)"
	}
	return fmt.Sprintf("%d%s", n, unit)
}

func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "bastion"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return "", fmt.Errorf("no home directory")
	}
	return filepath.Join(h, ".local", "state", "bastion"), nil
}

// Write prints e for a human: the settings, then warnings, then errors,
// then one summary line.
func (e *Effective) Write(w io.Writer) {
	fmt.Fprintf(w, "%s: policy %s\n", e.Server, e.PolicyFile)
	width := 0
	for _, s := range e.Settings {
		width = max(width, len(s.Key))
	}
	for _, s := range e.Settings {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.Key, s.Value)
	}
	for _, m := range e.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	for _, m := range e.Errors {
		fmt.Fprintf(w, "error: %s\n", m)
	}
	if len(e.Errors) > 0 {
		fmt.Fprintf(w, "FAIL: %s would not start (%d error(s), %d warning(s))\n", e.Server, len(e.Errors), len(e.Warnings))
		return
	}
	fmt.Fprintf(w, "ok: %s would start with this policy (%d warning(s))\n", e.Server, len(e.Warnings))
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// RunCheckCommand is the whole "<server> check" subcommand: flags
// --config FILE (default $BASTION_POLICY_FILE), --root DIR or DIR after
// the flags (the server's main folder as given to it; sweepd's is
// repeatable) and --strict (warnings fail too). It loads the policy as the
// server would, prints the effective settings, warnings and errors on
// stdout and returns 0 (would start), 1 (errors, or warnings under
// --strict) or 2 (the policy does not load: one "fatal:" line on stderr).
// extra, when non-nil, adds server-specific checks (e.g. opening roots the
// way the server will).
func RunCheckCommand(server string, args []string, stdout, stderr io.Writer, stateDir func() (string, error), extra func(*Policy, *Effective)) int {
	fs := flag.NewFlagSet(server+" check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg string
	var roots multiFlag
	var strict bool
	fs.StringVar(&cfg, "config", "", "policy `FILE` to check (default $"+EnvPolicyFile+")")
	if server == "sweepd" {
		fs.Var(&roots, "root", "an extra `DIR` as given to the server (repeatable)")
	} else if RootEnv(server) != "" {
		fs.Var(&roots, "root", "the `DIR` as given to the server, instead of "+RootKey(server))
	}
	fs.BoolVar(&strict, "strict", false, "exit 1 on warnings too")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s check [--config FILE] [--strict] [--root DIR | DIR]\n\nValidates a policy and prints the settings %s would run with, with warnings.\n", server, server)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	// The folder may also come as an argument, as the server takes it.
	for _, a := range fs.Args() {
		if strings.HasPrefix(a, "-") || (server != "sweepd" && RootEnv(server) == "") {
			return Exit(stderr, Fatalf("check: unexpected argument %q (flags go before the folder)", a))
		}
		roots = append(roots, a)
	}
	if cfg == "" && os.Getenv(EnvPolicyFile) == "" && len(roots) == 0 {
		return Exit(stderr, Fatalf("check: no policy: pass --config FILE or set %s", EnvPolicyFile))
	}
	p, err := Load(cfg)
	if err != nil {
		return Exit(stderr, err)
	}
	if server != "sweepd" {
		if err := p.UseCommandLineRoots(server, roots); err != nil {
			return Exit(stderr, err)
		}
		roots = nil
	}
	e := p.Effective(server, CheckOptions{Roots: roots, StateDir: stateDir})
	if extra != nil && len(e.Errors) == 0 {
		extra(p, e)
	}
	e.Write(stdout)
	if len(e.Errors) > 0 || (strict && len(e.Warnings) > 0) {
		return 1
	}
	return 0
}
