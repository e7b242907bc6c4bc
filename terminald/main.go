// Command terminald is the Bastion MCP server that runs single commands,
// without a shell, inside one operator-fixed directory, under a deny-first
// command policy and kernel confinement.
//
// Usage:
//
//	terminald --config policy.toml [--http ADDR --http-token-file FILE] [--log-level LEVEL]
//	terminald audit verify FILE
package main

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/terminald/internal/terminal"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	cli := mcpkit.NewCLI("terminald", version, "runs allowlisted commands without a shell, confined to one jail directory.", "", stderr)
	cli.Usage = []string{"--config policy.toml [--http ADDR --http-token-file FILE]"}
	cli.ArgsHint = " (the jail is [terminal] jail_root in the policy, or $" + config.EnvJailRoot + ")"
	if code, done := cli.Parse(args, stdout, stderr); done {
		return code
	}
	logger := cli.Logger
	pol, err := config.Load(cli.ConfigPath)
	if err != nil {
		return config.Exit(stderr, err)
	}
	t := pol.Terminal
	root, err := mcpkit.OpenRoot("jail_root", t.JailRoot,
		"set [terminal] jail_root in the policy file or $"+config.EnvJailRoot+"; terminald never picks a directory by itself")
	if err != nil {
		return config.Exit(stderr, err)
	}
	defer root.Close()

	mode := sandbox.Mode(t.Sandbox.EffectiveLandlock())
	iso := sandbox.Isolation(t.Sandbox.EffectiveIsolation())
	netMode := sandbox.NetMode(t.Sandbox.EffectiveNetwork())
	if _, err := sandbox.Preflight(mode, iso, netMode); err != nil {
		return config.Exit(stderr, config.Fatalf("[terminal.sandbox] landlock = %q, isolation = %q: %s", mode, iso, result.Reason(err)))
	}

	cp := t.CommandPolicy()
	if err := cp.Validate(); err != nil {
		return config.Exit(stderr, config.Fatalf("%s", result.Reason(err)))
	}
	if len(cp.Allow) == 0 {
		return config.Exit(stderr, config.Fatalf("[terminal.allowlist] commands is empty: nothing could run; list the programs terminald may run"))
	}

	rs, err := redact.CompileWith(pol.Redaction.Extras(), redact.Options{Entropy: pol.Redaction.Entropy})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("%s", result.Reason(err)))
	}
	var pass []string
	for _, name := range t.Env.Pass {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return config.Exit(stderr, config.Fatalf("[terminal.env] pass entry %q is not a variable name", name))
		}
		switch name {
		case "PATH", "HOME", "TMPDIR":
			return config.Exit(stderr, config.Fatalf("[terminal.env] pass must not list %s: terminald sets it", name))
		}
		if v, ok := os.LookupEnv(name); ok {
			pass = append(pass, name+"="+v)
		}
	}

	stateDir := t.State.Dir
	if stateDir == "" {
		base, err := audit.DefaultDir()
		if err != nil {
			return config.Exit(stderr, config.Fatalf("no [terminal.state] dir and %s", result.Reason(err)))
		}
		stateDir = filepath.Join(base, "terminald")
	}
	if err := config.CheckOutside("[terminal.state] dir", stateDir, []string{root.Path()}); err != nil {
		return config.Exit(stderr, err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return config.Exit(stderr, config.Fatalf("[terminal.state] dir %s cannot be created: %s", stateDir, result.Reason(err)))
	}

	logPath, err := pol.AuditPath("terminald", audit.DefaultDir)
	if err != nil {
		return config.Exit(stderr, err)
	}
	alog, err := audit.Open(audit.Options{Path: logPath, FailMode: pol.AuditFailMode, Server: "terminald",
		Roots: []string{root.Path()}, Logger: logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("audit log %s: %s", logPath, result.Reason(err)))
	}
	defer alog.Close()

	radar, err := risk.NewEngine(risk.Options{RuleFiles: pol.Radar.RuleFiles, ScanBytes: pol.Radar.ScanBytes, Patterns: pol.Redaction.Extras(), Logger: logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("[radar] %s", result.Reason(err)))
	}

	caches, err := sandbox.Caches(stateDir, t.Sandbox.Caches)
	if err != nil {
		return config.Exit(stderr, config.Fatalf("[terminal.sandbox] caches: %s", result.Reason(err)))
	}
	var proxySocket string
	if netMode == sandbox.NetProxy {
		stop, sock, err := startProxy(stateDir, t.Sandbox.AllowedHosts, alog, logger)
		if err != nil {
			return config.Exit(stderr, config.Fatalf("[terminal.sandbox] network = \"proxy\": %s", result.Reason(err)))
		}
		defer stop()
		proxySocket = sock
	}
	lim := t.Limits.WithDefaults()
	srv, err := terminal.New(terminal.Options{
		Root: root, Policy: cp, Path: t.Env.Path, PassEnv: pass, Redact: rs,
		Timeout: time.Duration(t.Limits.TimeoutSeconds) * time.Second, MaxOutputBytes: t.Limits.MaxOutputBytes,
		Landlock: mode, Isolation: iso, Net: netMode, ProxySocket: proxySocket,
		Limits: sandbox.Limits{MemoryMB: lim.MemoryMB, MaxProcesses: lim.MaxProcesses, CPUSeconds: lim.CPUSeconds,
			MaxFileMB: lim.MaxFileMB, MaxOpenFiles: lim.MaxOpenFiles},
		Sandboxed: t.Sandboxed(), Caches: caches, ReadPaths: t.Sandbox.ReadPaths, StateDir: stateDir,
		Audit: alog, Radar: radar, Logger: logger, Version: version,
	})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("%s", result.Reason(err)))
	}
	defer srv.Close() // before alog.Close (deferred earlier, so it runs later)
	srv.Prewarm()
	_ = alog.Event("start", map[string]any{"version": version, "jail_root": root.Path(), "confinement": srv.Confinement()})
	logger.Info("terminald ready", "version", version, "jail_root", root.Path(), "confinement", srv.Confinement(),
		"profile", t.EffectiveProfile(), "network", string(netMode), "audit", logPath, "state", stateDir,
		"allowlist", len(cp.Allow), "rules", len(cp.Rules))
	if strings.HasPrefix(srv.Confinement(), "none") {
		logger.Warn("commands run WITHOUT kernel confinement", "landlock", string(mode))
	}
	for _, u := range t.Unrunnable() {
		logger.Warn(u.Why)
	}
	return cli.Serve(srv.MCP(), radar.Watch, stderr)
}

// startProxy starts the filtering proxy of network = "proxy" on a UNIX
// socket in the state directory; every refusal is an audit event.
func startProxy(stateDir string, hosts []string, alog *audit.Log, logger *slog.Logger) (func(), string, error) {
	p, err := proxy.New(proxy.Options{AllowedHosts: hosts, Logger: logger,
		OnRefuse: func(r proxy.Refusal) {
			_ = alog.Event("proxy.refused", map[string]any{"host": r.Host, "port": r.Port, "method": r.Method, "reason": r.Reason})
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
