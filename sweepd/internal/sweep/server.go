package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// Options configure a Server.
type Options struct {
	Roots     []*jail.Root
	Disable   []string
	TicketTTL time.Duration
	MaxFinds  int
	Audit     *audit.Log
	Logger    *slog.Logger
	Version   string
	// Radar answers the file-context resource. When nil, New builds an
	// engine with the built-in rule packs only.
	Radar *risk.Engine
}

// Server holds sweepd's state: the fixed roots, the ticket store and the audit log.
type Server struct {
	roots    []*jail.Root
	ix       *index
	targets  []Target
	tickets  *ids.Store[ticket]
	audit    *audit.Log
	maxFinds int
	log      *slog.Logger
	version  string
	radar    *risk.Engine
}

type ticket struct {
	root    *jail.Root
	rel     string
	project string
	kind    string
	id      jail.Identity
	size    int64
	keep    bool
}

// New builds a Server. Unknown kinds in Disable are an error.
func New(o Options) (*Server, error) {
	disabled := map[string]bool{}
	known := map[string]bool{}
	for _, t := range Catalog {
		known[t.Kind] = true
	}
	for _, k := range o.Disable {
		if !known[k] {
			return nil, fmt.Errorf("sweep.disable: unknown kind %q", k)
		}
		disabled[k] = true
	}
	if o.TicketTTL <= 0 {
		o.TicketTTL = time.Hour
	}
	if o.MaxFinds <= 0 {
		o.MaxFinds = 500
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Radar == nil {
		eng, err := risk.NewEngine(risk.Options{Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		o.Radar = eng
	}
	var enabled []Target
	for _, t := range Catalog {
		if !disabled[t.Kind] {
			enabled = append(enabled, t)
		}
	}
	return &Server{roots: o.Roots, ix: newIndex(Catalog, disabled), targets: enabled,
		tickets: ids.NewStore[ticket]("f", o.TicketTTL, 200000), audit: o.Audit,
		maxFinds: o.MaxFinds, log: o.Logger, version: o.Version, radar: o.Radar}, nil
}

// Instructions is sent to clients at initialize.
const Instructions = "sweepd finds regenerable developer directories (node_modules, target, .venv, __pycache__, build outputs) " +
	"inside the roots the operator fixed, and deletes them only by the ids a scan returned. " +
	"Call scan, show the user the finds, then reclaim(ids) for a dry run, and reclaim(ids, confirm: \"delete\") only when the user agreed."

// MCP builds the MCP server with exactly three tools and the risk radar's
// file-context://{+path} resource template over the roots.
func (s *Server) MCP() *server.MCPServer {
	m := mcpkit.NewServer("sweepd", s.version, Instructions)
	m.AddTools(s.Tools()...)
	mcpkit.RegisterFileContext(m, s.roots, s.radar, s.log)
	return m
}

// Tools returns the three tools with their handlers.
func (s *Server) Tools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcpkit.NewTool("list_targets",
			"List the kinds of regenerable directories sweepd recognises: for each, the directory names, the marker file that must sit beside it (a directory without its marker is never a find), the ecosystem, and the command that regenerates it. Read-only.",
			mcpkit.Annotations{Title: "List sweep targets", ReadOnly: true, Idempotent: true},
			json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)),
			Handler: mcpkit.Handle("list_targets", s.log, s.listTargets)},
		{Tool: mcpkit.NewTool("scan",
			"Scan a directory inside the configured roots for regenerable build and dependency directories. Returns finds largest first, each with an id, its absolute path, kind, size on disk, the project's last activity, how to regenerate it, and keep=true when a .bastion-keep file protects it. Never follows symlinks, never crosses mounts, never enters .git. Changes nothing. Pass the ids to reclaim.",
			mcpkit.Annotations{Title: "Scan for reclaimable directories", ReadOnly: true, Idempotent: true},
			json.RawMessage(`{"type":"object","properties":{`+
				`"path":{"type":"string","description":"Directory to scan: absolute and inside a root, or relative to the root when there is exactly one. Omit to scan every root."},`+
				`"only":{"type":"array","items":{"type":"string"},"description":"Restrict to these kinds or ecosystems (see list_targets)."},`+
				`"min_size_mb":{"type":"number","minimum":0,"description":"Only finds at least this large (MiB)."},`+
				`"older_than_days":{"type":"number","minimum":0,"description":"Only finds whose project has not changed for this many days."},`+
				`"max_depth":{"type":"integer","minimum":1,"maximum":64,"description":"How many directory levels below path to search (default 32)."}`+
				`},"additionalProperties":false}`)),
			Handler: mcpkit.Handle("scan", s.log, s.scan)},
		{Tool: mcpkit.NewTool("reclaim",
			"Delete directories found by scan, named only by their ids. Without confirm, or with any confirm other than the exact string \"delete\", this is a dry run that re-checks each find and reports what would be deleted. Each find is re-validated against the live filesystem right before deletion (same directory, still beneath its root, not a symlink or mount, marker still beside it, no .bastion-keep); ids are single-use and expire after an hour.",
			mcpkit.Annotations{Title: "Reclaim scanned directories", Destructive: true},
			json.RawMessage(`{"type":"object","properties":{`+
				`"ids":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":1000,"description":"Ids from scan."},`+
				`"confirm":{"type":"string","description":"Exactly \"delete\" to delete; anything else is a dry run."}`+
				`},"required":["ids"],"additionalProperties":false}`)),
			Handler: mcpkit.Handle("reclaim", s.log, s.reclaim)},
	}
}

type noArgs struct{}

func (s *Server) listTargets(_ context.Context, _ mcp.CallToolRequest, _ noArgs) result.OperationResult {
	type out struct {
		Kind       string   `json:"kind"`
		Dirs       []string `json:"dirs"`
		Markers    []string `json:"markers"`
		Inside     []string `json:"inside,omitempty"`
		Ecosystem  string   `json:"ecosystem"`
		Regenerate string   `json:"regenerate"`
	}
	list := make([]out, 0, len(s.targets))
	for _, t := range s.targets {
		list = append(list, out{t.Kind, t.Dirs, t.Markers, t.Inside, t.Ecosystem, t.Regenerate})
	}
	return result.Success("list_targets", fmt.Sprintf("%d target kinds", len(list)),
		map[string]any{"targets": list, "keep_file": KeepFile}, time.Time{})
}

type scanArgs struct {
	Path          *string  `json:"path"`
	Only          []string `json:"only"`
	MinSizeMB     *float64 `json:"min_size_mb"`
	OlderThanDays *float64 `json:"older_than_days"`
	MaxDepth      *int     `json:"max_depth"`
}

// Find is one scan result as the client sees it.
type Find struct {
	ID           string `json:"id"`
	Path         string `json:"path"`
	Kind         string `json:"kind"`
	Ecosystem    string `json:"ecosystem"`
	SizeBytes    int64  `json:"size_bytes"`
	LastActivity string `json:"last_activity"`
	Regenerate   string `json:"regenerate"`
	Keep         bool   `json:"keep"`
}

func (s *Server) scan(ctx context.Context, req mcp.CallToolRequest, a scanArgs) result.OperationResult {
	start := time.Now()
	opts := walkOpts{maxDepth: 32}
	if a.MaxDepth != nil {
		if *a.MaxDepth < 1 || *a.MaxDepth > 64 {
			return result.With("scan", result.InvalidRequest, "max_depth must be between 1 and 64", nil, start)
		}
		opts.maxDepth = *a.MaxDepth
	}
	var minBytes int64
	if a.MinSizeMB != nil {
		if *a.MinSizeMB < 0 || math.IsNaN(*a.MinSizeMB) || *a.MinSizeMB > 1e9 {
			return result.With("scan", result.InvalidRequest, "min_size_mb must be a number between 0 and 1e9", nil, start)
		}
		minBytes = int64(*a.MinSizeMB * 1024 * 1024)
	}
	if a.OlderThanDays != nil {
		if *a.OlderThanDays < 0 || math.IsNaN(*a.OlderThanDays) || *a.OlderThanDays > 36500 {
			return result.With("scan", result.InvalidRequest, "older_than_days must be a number between 0 and 36500", nil, start)
		}
		opts.olderThan = time.Now().Add(-time.Duration(*a.OlderThanDays * 24 * float64(time.Hour)))
	}
	if len(a.Only) > 0 {
		opts.only = map[string]bool{}
		valid := map[string]bool{}
		for _, t := range s.targets {
			valid[t.Kind], valid[t.Ecosystem] = true, true
		}
		for _, k := range a.Only {
			if !valid[k] {
				return result.With("scan", result.InvalidRequest,
					fmt.Sprintf("only: unknown kind or ecosystem %q; list_targets shows the valid names", truncate(k, 64)), nil, start)
			}
			opts.only[k] = true
		}
	}
	type startAt struct {
		root *jail.Root
		rel  string
	}
	var starts []startAt
	if a.Path == nil {
		for _, r := range s.roots {
			starts = append(starts, startAt{r, "."})
		}
	} else {
		r, rel, err := s.locate(*a.Path)
		if err != nil {
			return result.Fail("scan", err, nil, start)
		}
		starts = append(starts, startAt{r, rel})
	}
	progress := mcpkit.Progress(ctx, req)
	var all []*found
	dirs := 0
	for _, st := range starts {
		d, err := st.root.OpenDir(st.rel)
		if err != nil {
			return result.Fail("scan", err, nil, start)
		}
		w := &walker{ctx: ctx, root: st.root, ix: s.ix, opts: opts}
		w.opts.progress = func(n, f int) {
			progress(float64(dirs+n), 0, fmt.Sprintf("%d directories walked, %d finds", dirs+n, len(all)+f))
		}
		w.walk(d, st.rel, 0, st.root.Kept(st.rel, KeepFile), nil)
		d.Close()
		dirs += w.dirs
		all = append(all, w.finds...)
	}
	if ctx.Err() != nil {
		return result.With("scan", result.OperationFailed, "the scan was cancelled; nothing was returned", nil, start)
	}
	if !opts.olderThan.IsZero() {
		kept := all[:0]
		for _, f := range all {
			if f.lastActivity.Before(opts.olderThan) {
				kept = append(kept, f)
			}
		}
		all = kept
	}
	sizeAll(ctx, all)
	if ctx.Err() != nil {
		return result.With("scan", result.OperationFailed, "the scan was cancelled; nothing was returned", nil, start)
	}
	matched := all[:0]
	var total int64
	for _, f := range all {
		if f.size < 0 || f.size < minBytes {
			continue
		}
		matched = append(matched, f)
		total += f.size
	}
	sortFinds(matched)
	truncated := len(matched) > s.maxFinds
	shown := matched
	if truncated {
		shown = matched[:s.maxFinds]
	}
	finds := make([]Find, 0, len(shown))
	for _, f := range shown {
		id := s.tickets.Issue(ticket{root: f.root, rel: f.rel, project: f.project, kind: f.target.Kind, id: f.id, size: f.size, keep: f.keep})
		la := ""
		if !f.lastActivity.IsZero() {
			la = f.lastActivity.UTC().Format(time.RFC3339)
		}
		finds = append(finds, Find{ID: id, Path: filepath.Join(f.root.Path(), filepath.FromSlash(f.rel)),
			Kind: f.target.Kind, Ecosystem: f.target.Ecosystem, SizeBytes: f.size, LastActivity: la,
			Regenerate: f.target.Regenerate, Keep: f.keep})
	}
	progress(float64(dirs), float64(dirs), "done")
	path := ""
	rootPath := ""
	if a.Path != nil {
		rootPath = starts[0].root.Path()
		path = filepath.Join(rootPath, filepath.FromSlash(starts[0].rel))
	}
	reason := fmt.Sprintf("%d finds, %s reclaimable, %d directories walked", len(matched), human(total), dirs)
	if truncated {
		reason += fmt.Sprintf("; showing the %d largest (raise min_size_mb or narrow path to see others)", s.maxFinds)
	}
	return result.Success("scan", reason, map[string]any{
		"root": rootPath, "path": path, "finds": finds, "count": len(matched),
		"total_bytes": total, "truncated": truncated,
	}, start)
}

// locate maps a requested path to its root and root-relative path.
func (s *Server) locate(p string) (*jail.Root, string, error) {
	if filepath.IsAbs(p) {
		var firstErr error
		for _, r := range s.roots {
			rel, err := r.Clean(p)
			if err == nil {
				return r, rel, nil
			}
			if firstErr == nil || result.CodeOf(err) != result.PathEscape {
				firstErr = err
			}
		}
		if firstErr == nil || result.CodeOf(firstErr) == result.PathEscape {
			// No root at all, or outside every one of them.
			if len(s.roots) == 0 {
				return nil, "", result.New(result.PathEscape, "no roots are configured, so every path is outside them")
			}
			return nil, "", result.New(result.PathEscape, "the path is outside every configured root; scan only inside: "+s.rootList())
		}
		return nil, "", firstErr
	}
	if len(s.roots) != 1 {
		return nil, "", result.New(result.InvalidRequest, "with several roots, give an absolute path inside one of them: "+s.rootList())
	}
	rel, err := s.roots[0].Clean(p)
	return s.roots[0], rel, err
}

func (s *Server) rootList() string {
	var ps []string
	for _, r := range s.roots {
		ps = append(ps, r.Path())
	}
	return strings.Join(ps, ", ")
}

// reclaimWorkers is how many finds are re-validated and deleted at once;
// each id is handled independently, results keep the request's order.
const reclaimWorkers = 4

type reclaimArgs struct {
	IDs     []string `json:"ids"`
	Confirm *string  `json:"confirm"`
}

// Outcome is one id's result in reclaim.
type Outcome struct {
	ID        string      `json:"id"`
	Path      string      `json:"path"`
	Code      result.Code `json:"code"`
	Reason    string      `json:"reason"`
	SizeBytes int64       `json:"size_bytes"`
}

func (s *Server) reclaim(ctx context.Context, _ mcp.CallToolRequest, a reclaimArgs) result.OperationResult {
	start := time.Now()
	if len(a.IDs) == 0 {
		return result.With("reclaim", result.InvalidRequest, "ids is required: pass the ids a scan returned", nil, start)
	}
	if len(a.IDs) > 1000 {
		return result.With("reclaim", result.InvalidRequest, "at most 1000 ids per call", nil, start)
	}
	dry := a.Confirm == nil || *a.Confirm != "delete"
	results := make([]Outcome, len(a.IDs))
	seen := map[string]bool{}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(len(a.IDs), reclaimWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = s.reclaimOne(ctx, a.IDs[i], dry)
			}
		}()
	}
	for i, id := range a.IDs {
		if seen[id] {
			results[i] = Outcome{ID: truncate(id, 64), Code: result.InvalidRequest, Reason: "this id appears twice in the request"}
			continue
		}
		seen[id] = true
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	var reclaimed int64
	okCount := 0
	for _, o := range results {
		if o.Code == result.OK {
			okCount++
			if !dry {
				reclaimed += o.SizeBytes
			}
		}
	}
	detail := map[string]any{"dry_run": dry, "results": results, "reclaimed_bytes": reclaimed}
	var reason string
	switch {
	case dry && a.Confirm != nil:
		reason = fmt.Sprintf("dry run: confirm was %q, not \"delete\"; nothing was deleted. %d of %d would be deleted; to delete, call reclaim again with the same ids and confirm: \"delete\"", truncate(*a.Confirm, 32), okCount, len(a.IDs))
	case dry:
		reason = fmt.Sprintf("dry run: nothing was deleted. %d of %d would be deleted; to delete, call reclaim again with the same ids and confirm: \"delete\"", okCount, len(a.IDs))
	default:
		reason = fmt.Sprintf("%d of %d deleted, %s reclaimed", okCount, len(a.IDs), human(reclaimed))
	}
	if okCount == len(a.IDs) {
		return result.Success("reclaim", reason, detail, start)
	}
	first := result.InternalError
	for _, r := range results {
		if r.Code != result.OK {
			first = r.Code
			break
		}
	}
	return result.With("reclaim", first, reason+" (see results for each refusal)", detail, start)
}

func (s *Server) reclaimOne(ctx context.Context, id string, dry bool) Outcome {
	var t ticket
	var err error
	if dry {
		t, err = s.tickets.Peek(id)
	} else {
		t, err = s.tickets.Take(id)
	}
	if err != nil {
		code, reason := result.Classify(err)
		return Outcome{ID: truncate(id, 64), Code: code, Reason: reason}
	}
	abs := filepath.Join(t.root.Path(), filepath.FromSlash(t.rel))
	out := Outcome{ID: id, Path: abs, SizeBytes: t.size}
	target := s.ix.kinds[t.kind]
	if target == nil {
		out.Code, out.Reason = result.PolicyDenied, "this kind of target is disabled"
		return out
	}
	g := jail.Guard{Want: t.id, Markers: target.Markers, MarkerDir: t.project, Inside: target.Inside, KeepFile: KeepFile}
	if ctx.Err() != nil {
		out.Code, out.Reason = result.OperationFailed, "cancelled before this id was handled"
		return out
	}
	if dry {
		p, d, err := t.root.Verify(t.rel, g)
		if err != nil {
			out.Code, out.Reason = result.Classify(err)
			return out
		}
		p.Close()
		d.Close()
		out.Code, out.Reason = result.OK, "would be deleted (dry run)"
		return out
	}
	var intent string
	fields := map[string]any{"id": id, "path": abs, "kind": t.kind, "size_bytes": t.size}
	g.Intent = func() error {
		var err error
		intent, err = s.audit.Intent("reclaim", fields)
		return err
	}
	u, err := t.root.RemoveTree(t.rel, g)
	code, reason := result.Classify(err)
	if err == nil {
		reason = "deleted"
		out.SizeBytes = u.Bytes
	}
	if intent != "" {
		if aerr := s.audit.Outcome(intent, "reclaim", code, map[string]any{"id": id, "path": abs, "removed_bytes": u.Bytes, "removed_files": u.Files, "reason": reason}); aerr != nil {
			s.log.Error("audit outcome record failed", "id", id)
		}
	}
	out.Code, out.Reason = code, reason
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func human(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
