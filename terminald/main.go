// Command terminald is the Bastion MCP server that runs single commands,
// without a shell, inside one operator-fixed directory, under a deny-first
// command policy and kernel confinement.
//
// Usage:
//
//	terminald --config policy.toml [--http ADDR --http-token-file FILE] [--log-level LEVEL] [--root DIR | DIR]
//	terminald audit verify FILE
//	terminald quarantine list|restore DIR [RUN/N]
package main

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/runner"
	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/terminald/internal/terminal"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	cli := mcpkit.NewCLI("terminald", version, "runs allowlisted commands without a shell, confined to one jail directory.", "", stderr)
	cli.TakeRoots("the jail `DIR`, the only tree commands may write")
	cli.PolicyRequired = true
	cli.Usage = []string{"--config policy.toml [--http ADDR --http-token-file FILE] [--root DIR | DIR]"}
	cli.Check = func(p *config.Policy, e *config.Effective) {
		if err := p.Terminal.Preflight(); err != nil {
			e.Errorf("%s", err)
		}
		for _, l := range p.Terminal.LeftoverRuns(audit.DefaultDir) {
			e.Warnf("run directory %s, of a terminald that is gone, holds %d bytes: the next start removes it or logs why it cannot (an immutable file, a mount, another user's file)", l.Path, l.Bytes)
		}
	}
	if len(args) > 0 && args[0] == "quarantine" {
		return protect.RunQuarantineCommand(args[1:], stdout, stderr)
	}
	if code, done := cli.Parse(args, stdout, stderr); done {
		return code
	}
	pol, err := config.Load(cli.ConfigPath)
	if err != nil {
		return config.Exit(stderr, err)
	}
	if err := pol.UseCommandLineRoots("terminald", cli.Roots); err != nil {
		return config.Exit(stderr, err)
	}
	if err := cli.StartTelemetry(pol); err != nil {
		return config.Exit(stderr, err)
	}
	defer cli.StopTelemetry() // runs after the audit log closes (deferred earlier), so its last records are sent
	root, err := mcpkit.OpenRoot("jail_root", pol.Terminal.JailRoot,
		"pass --root DIR or DIR, set $"+config.EnvJailRoot+", or set [terminal] jail_root in the policy file; terminald never picks a directory by itself")
	if err != nil {
		return config.Exit(stderr, err)
	}
	defer root.Close()
	rt, err := pol.Terminal.Runtime(root.Path(), audit.DefaultDir)
	if err != nil {
		return config.Exit(stderr, err)
	}
	rs, err := redact.CompileWith(pol.Redaction.Extras(), redact.Options{Entropy: pol.Redaction.Entropy})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("%s", result.Reason(err)))
	}
	logPath, err := pol.AuditPath("terminald", audit.DefaultDir)
	if err != nil {
		return config.Exit(stderr, err)
	}
	alog, err := audit.Open(audit.Options{Path: logPath, FailMode: pol.AuditFailMode, Server: "terminald",
		Roots: []string{root.Path()}, Logger: cli.Logger, MaxBytes: pol.Audit.MaxBytes(), Keep: pol.Audit.Files()})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("audit log %s: %s", logPath, result.Reason(err)))
	}
	defer alog.Close()
	radar, err := risk.NewEngine(risk.Options{RuleFiles: pol.Radar.RuleFiles, ScanBytes: pol.Radar.ScanBytes,
		SummaryMaxEntries: pol.Radar.SummaryMaxEntries, Patterns: pol.Redaction.Extras(), Logger: cli.Logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("[radar] %s", result.Reason(err)))
	}
	fallback, timeout := pol.Approval.Asking()
	o := terminal.Options{Options: runner.Options{TerminalRuntime: rt, Root: root, Redact: rs, Audit: alog, Logger: cli.Logger},
		Radar: radar, Version: version,
		Asker: approval.New(approval.Options{Fallback: approval.Fallback(fallback), Timeout: timeout, Audit: alog})}
	// The proxy's refusals go to the run that asked once the server exists.
	var runs atomic.Pointer[terminal.Server]
	if rt.Net == sandbox.NetProxy {
		stop, sock, err := startProxy(rt.StateDir, pol.Terminal.Sandbox.ProxyHosts(), alog, cli.Logger, func(r proxy.Refusal) {
			if s := runs.Load(); s != nil {
				s.NoteProxyRefusal(r)
			}
		})
		if err != nil {
			return config.Exit(stderr, config.Fatalf("[terminal.sandbox] network = \"proxy\": %s", result.Reason(err)))
		}
		defer stop()
		o.ProxySocket = sock
	}
	srv, err := terminal.New(o)
	if err != nil {
		return config.Exit(stderr, config.Fatalf("%s", result.Reason(err)))
	}
	defer srv.Close() // before alog.Close (deferred earlier, so it runs later)
	runs.Store(srv)
	srv.Prewarm()
	_ = alog.Event("start", map[string]any{"version": version, "jail_root": root.Path(), "confinement": srv.Confinement()})
	announce(cli.Logger, pol.Terminal, rt, srv, root.Path(), logPath)
	return cli.Serve(srv.MCP(), radar.Watch, stderr)
}

// announce logs that terminald is ready, with what it runs under, and
// warns about commands without kernel confinement, allowlisted commands
// that cannot run, and a jail or state directory under /dev/shm (every
// command then starts its own helper: sandbox.UnderViewShm).
func announce(logger *slog.Logger, t config.Terminal, rt config.TerminalRuntime, srv *terminal.Server, jailRoot, logPath string) {
	logger.Info("terminald ready", "version", version, "jail_root", jailRoot, "confinement", srv.Confinement(),
		"profile", t.EffectiveProfile(), "network", string(rt.Net), "audit", logPath, "state", rt.StateDir,
		"allowlist", len(rt.Policy.Allow), "rules", len(rt.Policy.Rules))
	if strings.HasPrefix(srv.Confinement(), "none") {
		logger.Warn("commands run WITHOUT kernel confinement", "landlock", string(rt.Landlock))
	}
	for _, u := range t.Unrunnable() {
		logger.Warn(u.Why)
	}
	if strings.HasPrefix(srv.Confinement(), "namespaces") {
		for _, p := range sandbox.UnderViewShm(jailRoot, rt.StateDir) {
			logger.Warn("under "+sandbox.ViewShm+": no sandbox helper can be kept between commands, so every command starts its own "+
				"(about 7 ms more per command); keep the jail and state_dir out of "+sandbox.ViewShm, "path", p)
		}
	}
	for _, why := range rt.GitIdentitySkipped {
		logger.Warn("[terminal.sandbox] git_identity = true but " + why + ": git commit in the sandbox cannot use it (set it with git config --global on this machine)")
	}
}

// startProxy starts the filtering proxy of network = "proxy" on a UNIX
// socket in the state directory; every refusal is an audit event and is
// handed to note, which attributes it to the run that asked.
func startProxy(stateDir string, hosts []string, alog *audit.Log, logger *slog.Logger, note func(proxy.Refusal)) (func(), string, error) {
	p, err := proxy.New(proxy.Options{AllowedHosts: hosts, Logger: logger,
		OnRefuse: func(r proxy.Refusal) {
			_ = alog.Event("proxy.refused", map[string]any{"host": r.Host, "port": r.Port, "method": r.Method, "reason": r.Reason})
			note(r)
		}})
	if err != nil {
		return nil, "", err
	}
	// One socket per server process: several terminald may share a state
	// directory (one per MCP client), and none may take another's socket.
	sock := filepath.Join(stateDir, ids.New("proxy")+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, "", result.Wrap(result.InternalError, "the proxy's socket could not be created in the state directory", err)
	}
	go func() { _ = p.Serve(ln) }()
	return func() { _ = p.Close(); _ = os.Remove(sock) }, sock, nil
}
