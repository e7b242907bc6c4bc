// Command organizerd is the Bastion MCP server that tidies one workspace
// folder into category folders: it plans before it acts, never overwrites,
// never deletes, and journals every move so that a crash at any instant loses
// nothing and can be undone.
//
// Usage:
//
//	organizerd [--config policy.toml] [--http ADDR] [--root DIR | DIR]
//	organizerd audit verify FILE
package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/organizerd/internal/organizer"
	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	cli := mcpkit.NewCLI("organizerd", version, "plans and applies file organizing in one workspace, never overwriting, with a crash-safe undo journal.",
		"the workspace is --root DIR, DIR, $"+config.EnvWorkspaceRoot+" or [organizer] workspace_root", stderr)
	cli.TakeRoots("the workspace `DIR` organizerd tidies")
	cli.Usage = []string{"[--config policy.toml] [--http ADDR] [--root DIR | DIR]"}
	if code, done := cli.Parse(args, stdout, stderr); done {
		return code
	}
	logger := cli.Logger
	pol, err := config.Load(cli.ConfigPath)
	if err != nil {
		return config.Exit(stderr, err)
	}
	if err := pol.UseCommandLineRoots("organizerd", cli.Roots); err != nil {
		return config.Exit(stderr, err)
	}
	if err := cli.StartTelemetry(pol); err != nil {
		return config.Exit(stderr, err)
	}
	defer cli.StopTelemetry() // runs after the audit log closes (deferred earlier), so its last records are sent
	o := pol.Organizer
	root, err := mcpkit.OpenRoot("workspace", o.WorkspaceRoot,
		"pass --root DIR or DIR, set $"+config.EnvWorkspaceRoot+", or set [organizer] workspace_root in the policy file; organizerd never picks a folder by itself")
	if err != nil {
		return config.Exit(stderr, err)
	}
	defer root.Close()
	rules, err := organize.New(o)
	if err != nil {
		return config.Exit(stderr, pol.Locate(err))
	}
	jpath := o.Journal
	if jpath == "" {
		dir, err := audit.DefaultDir()
		if err != nil {
			return config.Exit(stderr, config.Fatalf("no journal: set [organizer] journal or $%s (%s)", config.EnvJournal, result.Reason(err)))
		}
		jpath = filepath.Join(dir, "organizerd.journal")
	}
	if jpath, err = filepath.Abs(jpath); err != nil {
		return config.Exit(stderr, config.Fatalf("journal %q: cannot make it absolute", o.Journal))
	}
	if err := config.CheckOutside("journal", jpath, []string{root.Path()}); err != nil {
		return config.Exit(stderr, err)
	}
	logPath, err := pol.AuditPath("organizerd", audit.DefaultDir)
	if err != nil {
		return config.Exit(stderr, err)
	}
	alog, err := audit.Open(audit.Options{Path: logPath, FailMode: pol.AuditFailMode, Server: "organizerd", Roots: []string{root.Path()}, Logger: logger, MaxBytes: pol.Audit.MaxBytes(), Keep: pol.Audit.Files()})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("audit log %s: %s", logPath, result.Reason(err)))
	}
	defer alog.Close()
	engine, err := risk.NewEngine(risk.Options{RuleFiles: pol.Radar.RuleFiles, ScanBytes: pol.Radar.ScanBytes,
		SummaryMaxEntries: pol.Radar.SummaryMaxEntries, Patterns: pol.Redaction.Extras(), Logger: logger})
	if err != nil {
		return config.Exit(stderr, config.Fatalf("[radar] %s", result.Reason(err)))
	}
	j, err := openJournal(jpath, root, alog, logger)
	if err != nil {
		return config.Exit(stderr, err)
	}
	defer j.Close()
	_, applyPlan, moveFile := pol.Approval.Who()
	fallback, timeout := pol.Approval.Asking()
	asker := approval.New(approval.Options{Fallback: approval.Fallback(fallback), Timeout: timeout, Audit: alog})
	srv := organizer.New(organizer.Options{Version: version, Options: organize.Options{
		Root: root, Rules: rules, Journal: j, Audit: alog, Logger: logger,
		Radar: &organize.Radar{Engine: engine, Root: root.Path()},
		Asker: asker, ApplyPlan: approval.Who(applyPlan), MoveFile: approval.Who(moveFile)}})
	_ = alog.Event("start", map[string]any{"version": version, "workspace": root.Path(), "journal": jpath,
		"approval": map[string]any{"apply_plan": applyPlan, "move_file": moveFile, "fallback": fallback}})
	logger.Info("organizerd ready", "version", version, "workspace", root.Path(), "journal", jpath, "audit", logPath,
		"boundary", jail.Guarantee, "moves", jail.MoveGuarantee)
	return cli.Serve(srv.MCP(), engine.Watch, stderr)
}

// openJournal opens the journal, which recovers an interrupted action and
// sets a damaged tail aside, and records both in the audit log: a "recover"
// intent before an action's recovery moves anything (fail-closed: the
// action's own intent may not have been written), a "recovered" event
// after it, and a "journal_tail_set_aside" event naming the sidecar, the
// offset, length, line count and SHA-256 of what was set aside.
func openJournal(path string, root *jail.Root, alog *audit.Log, logger *slog.Logger) (*journal.Journal, error) {
	announce := func(a *journal.Action) error { // before recovery moves anything
		_, err := alog.Intent("recover", map[string]any{"action_id": a.ID, "tool": a.Tool, "label": a.Label, "moves": len(a.Moves)})
		return err
	}
	j, recovered, err := journal.Open(path, root, journal.Options{Logger: logger, Recovering: announce})
	if err != nil {
		return nil, config.Fatalf("journal %s: %s", path, result.Reason(err))
	}
	if t := j.Tail(); t != nil {
		_ = alog.Event("journal_tail_set_aside", map[string]any{"journal": path, "sidecar": t.Sidecar,
			"offset": t.Offset, "bytes": t.Bytes, "lines": t.Lines, "sha256": t.SHA256})
	}
	for _, r := range recovered {
		_ = alog.Event("recovered", map[string]any{"action_id": r.ID, "op": r.Op, "tool": r.Tool, "completed": r.Completed, "dropped": r.Dropped})
	}
	return j, nil
}
