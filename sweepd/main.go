// Command sweepd is the Bastion MCP server that finds regenerable developer
// directories inside operator-fixed roots and deletes them only by ticket id.
//
// Usage:
//
//	sweepd --root DIR [--root DIR ...] [--config policy.toml] [--http ADDR]
//	sweepd [flags] DIR [DIR ...]
//	sweepd check [--config policy.toml] [--root DIR ...]
//	sweepd --print-client-config CLIENT --root DIR [...]
//	sweepd audit verify FILE
package main

import (
	"io"
	"os"
	"runtime"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/reclaim"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/sweepd/internal/sweep"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	cli := mcpkit.NewCLI("sweepd", version, "finds regenerable developer directories and deletes them only by ticket id.", "", stderr)
	cli.TakeRoots("a `DIR` sweepd may scan and reclaim in (repeatable; adds to [sweep] roots)")
	cli.Usage = []string{"--root DIR [--root DIR ...] [--config policy.toml] [--http ADDR]",
		"[flags] DIR [DIR ...]   (each DIR is a root, as with --root: how MCP bundles pass a multi-directory setting)"}
	cli.Check = checkRoots
	if code, done := cli.Parse(args, stdout, stderr); done {
		return code
	}
	logger := cli.Logger
	pol, err := config.Load(cli.ConfigPath)
	if err != nil {
		return config.Exit(stderr, err)
	}
	if err := pol.UseCommandLineRoots("sweepd", cli.Roots); err != nil {
		return config.Exit(stderr, err)
	}
	if err := cli.StartTelemetry(pol); err != nil {
		return config.Exit(stderr, err)
	}
	defer cli.StopTelemetry() // runs after the audit log closes (deferred earlier), so its last records are sent
	all := pol.MainRoots("sweepd")
	if len(all) == 0 {
		return config.Exit(stderr, config.Fatalf("no root: pass --root DIR (repeatable) or DIR, set $%s, or set [sweep] roots in the policy file; sweepd never picks a root by itself", config.EnvSweepRoots))
	}
	var opened []*jail.Root
	var paths []string
	for _, r := range all {
		jr, err := mcpkit.OpenRoot("root", r, "an empty root was given; pass --root DIR or list directories in [sweep] roots")
		if err != nil {
			return config.Exit(stderr, err)
		}
		opened = append(opened, jr)
		paths = append(paths, jr.Path())
	}
	logPath, err := pol.AuditPath("sweepd", audit.DefaultDir)
	if err != nil {
		return config.Exit(stderr, err)
	}
	alog, err := audit.Open(audit.Options{Path: logPath, FailMode: pol.AuditFailMode, Server: "sweepd", Roots: paths, Logger: logger, MaxBytes: pol.Audit.MaxBytes(), Keep: pol.Audit.Files()})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("audit log %s: %s", logPath, result.Reason(err)))
	}
	defer alog.Close()
	radar, err := risk.NewEngine(risk.Options{RuleFiles: pol.Radar.RuleFiles, ScanBytes: pol.Radar.ScanBytes,
		SummaryMaxEntries: pol.Radar.SummaryMaxEntries, Patterns: pol.Redaction.Extras(), Logger: logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("[radar] %s", result.Reason(err)))
	}
	who, _, _ := pol.Approval.Who()
	fallback, timeout := pol.Approval.Asking()
	asker := approval.New(approval.Options{Fallback: approval.Fallback(fallback), Timeout: timeout, Audit: alog})
	srv, err := sweep.New(sweep.Options{Radar: radar, Roots: opened, Disable: pol.Sweep.Disable, TicketTTL: pol.Sweep.TTL(),
		MaxFinds: pol.Sweep.MaxFinds, Audit: alog, Logger: logger, Version: version, Asker: asker, Confirmer: approval.Who(who),
		AllowTracked: pol.Sweep.AllowTracked})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("%v", err))
	}
	_ = alog.Event("start", map[string]any{"version": version, "roots": paths})
	reclaim.Recover(opened, alog, logger)
	logger.Info("sweepd ready", "version", version, "roots", paths, "audit", logPath, "boundary", jail.Guarantee)
	if runtime.GOOS != "linux" {
		logger.Warn("weaker filesystem boundary on this platform: no openat2; see docs/guarantees.md", "os", runtime.GOOS)
	}
	return cli.Serve(srv.MCP(), radar.Watch, stderr)
}

// checkRoots is sweepd's part of "check": open each root the way the
// server will, so a root the jail refuses fails the check too.
func checkRoots(pol *config.Policy, e *config.Effective) {
	for _, s := range e.Settings {
		if s.Key != "sweep.root" {
			continue
		}
		jr, err := jail.OpenRoot(s.Value)
		if err != nil {
			e.Errorf("root %s: %s", s.Value, result.Reason(err))
			continue
		}
		_ = jr.Close()
	}
}
