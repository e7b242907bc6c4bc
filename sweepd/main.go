// Command sweepd is the Bastion MCP server that finds regenerable developer
// directories inside operator-fixed roots and deletes them only by ticket id.
//
// Usage:
//
//	sweepd --root DIR [--root DIR ...] [--config policy.toml] [--http ADDR]
//	sweepd check [--config policy.toml] [--root DIR ...]
//	sweepd --print-client-config CLIENT --root DIR [...]
//	sweepd audit verify FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/sweepd/internal/sweep"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// Get returns every value, so --print-client-config repeats the flag.
func (m *multi) Get() any { return []string(*m) }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "audit" {
		if len(args) < 2 || args[1] != "verify" {
			fmt.Fprintln(stderr, "usage: sweepd audit verify FILE")
			return 2
		}
		return audit.RunVerifyCommand(args[2:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "check" {
		return config.RunCheckCommand("sweepd", args[1:], stdout, stderr, audit.DefaultDir, checkRoots)
	}
	fs := flag.NewFlagSet("sweepd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var roots multi
	var cfgPath, logLevel string
	var showVersion bool
	var printClient string
	var tr mcpkit.Transport
	fs.Var(&roots, "root", "a `DIR` sweepd may scan and reclaim in (repeatable; adds to [sweep] roots)")
	fs.StringVar(&cfgPath, "config", "", "policy `FILE` (default $"+config.EnvPolicyFile+")")
	fs.StringVar(&logLevel, "log-level", "info", "log `LEVEL` on stderr: debug, info, warn, error")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	tr.Flags(fs)
	mcpkit.PrintClientConfigFlag(fs, &printClient)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "sweepd %s: finds regenerable developer directories and deletes them only by ticket id.\n\n", version)
		fmt.Fprintln(stderr, "usage: sweepd --root DIR [--root DIR ...] [--config policy.toml] [--http ADDR]")
		fmt.Fprintln(stderr, "       sweepd check [--config policy.toml] [--root DIR ...]")
		fmt.Fprintln(stderr, "       sweepd --print-client-config CLIENT --root DIR [...]")
		fmt.Fprintln(stderr, "       sweepd audit verify FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if showVersion {
		fmt.Fprintf(stdout, "sweepd %s\n", version)
		return 0
	}
	if printClient != "" {
		return mcpkit.RunPrintClientConfig("sweepd", printClient, fs, stdout, stderr)
	}
	if fs.NArg() > 0 {
		return config.Exit(stderr, config.Fatalf("unexpected argument %q (roots are given with --root)", fs.Arg(0)))
	}
	logger, err := mcpkit.NewLogger(stderr, logLevel)
	if err != nil {
		return config.Exit(stderr, err)
	}
	if err := tr.Validate(); err != nil {
		return config.Exit(stderr, err)
	}
	pol, err := config.Load(cfgPath)
	if err != nil {
		return config.Exit(stderr, err)
	}
	all := append(append([]string{}, pol.Sweep.Roots...), roots...)
	if len(all) == 0 {
		return config.Exit(stderr, config.Fatalf("no root: pass --root DIR (repeatable) or set [sweep] roots in the policy file; sweepd never picks a root by itself"))
	}
	var opened []*jail.Root
	var paths []string
	for _, r := range all {
		abs, err := filepath.Abs(r)
		if err != nil {
			return config.Exit(stderr, config.Fatalf("root %q: cannot make it absolute", r))
		}
		jr, err := jail.OpenRoot(abs)
		if err != nil {
			return config.Exit(stderr, config.Fatalf("root %s: %s", abs, reasonOf(err)))
		}
		opened = append(opened, jr)
		paths = append(paths, jr.Path())
	}
	logPath, err := pol.AuditPath("sweepd", audit.DefaultDir)
	if err != nil {
		return config.Exit(stderr, err)
	}
	alog, err := audit.Open(audit.Options{Path: logPath, FailMode: pol.AuditFailMode, Server: "sweepd", Roots: paths, Logger: logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("audit log %s: %s", logPath, reasonOf(err)))
	}
	defer alog.Close()
	radar, err := risk.NewEngine(risk.Options{RuleFiles: pol.Radar.RuleFiles, ScanBytes: pol.Radar.ScanBytes, Logger: logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("[radar]: %s", reasonOf(err)))
	}
	srv, err := sweep.New(sweep.Options{Radar: radar, Roots: opened, Disable: pol.Sweep.Disable, TicketTTL: pol.Sweep.TTL(),
		MaxFinds: pol.Sweep.MaxFinds, Audit: alog, Logger: logger, Version: version})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("%v", err))
	}
	_ = alog.Event("start", map[string]any{"version": version, "roots": paths})
	logger.Info("sweepd ready", "version", version, "roots", paths, "audit", logPath, "boundary", jail.Guarantee)
	if runtime.GOOS != "linux" {
		logger.Warn("weaker filesystem boundary on this platform: no openat2; see docs/guarantees.md", "os", runtime.GOOS)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		if err := radar.Watch(ctx); err != nil {
			logger.Warn("risk rule files will not hot-reload", "err", err)
		}
	}()
	if err := mcpkit.Serve(ctx, srv.MCP(), tr, logger); err != nil {
		return config.Exit(stderr, err)
	}
	return 0
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
			e.Errorf("root %s: %s", s.Value, reasonOf(err))
			continue
		}
		_ = jr.Close()
	}
}

func reasonOf(err error) string {
	_, reason := result.Classify(err)
	return reason
}
