package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/reclaim"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// scanTool is scan: regenerable directories found inside the roots, changing nothing.
func (s *Server) scanTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("scan",
		"Scan a directory inside the configured roots for regenerable build and dependency directories. Returns finds largest first, each with an id, its absolute path, kind, size on disk, the project's last activity, how to regenerate it, and keep=true with keep_reason when a .bastion-keep file protects it or when it holds files git tracks (a committed node_modules, dist or vendor: not regenerable, so not reclaimable unless the operator set [sweep] allow_tracked; the reason counts them and names the repository), inside: the HIGH_RISK and git-tracked files it holds, named, and radar: the risk radar's view of what inside the find is not ignorable (counts and up to 10 items with importance, suggested_action and reason, such as a .env inside node_modules; unlisted says which counted files are not listed and why). Git facts come from each path's own repository under the root, read without running git. Never follows symlinks, never crosses mounts, never enters .git. Changes nothing. Pass the ids to reclaim.",
		mcpkit.Annotations{Title: "Scan for reclaimable directories", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"path":{"type":"string","description":"Directory to scan: absolute and inside a root, or relative to the root when there is exactly one. Omit to scan every root."},`+
			`"only":{"type":"array","items":{"type":"string"},"description":"Restrict to these kinds or ecosystems (see list_targets)."},`+
			`"min_size_mb":{"type":"number","minimum":0,"description":"Only finds at least this large (MiB)."},`+
			`"older_than_days":{"type":"number","minimum":0,"description":"Only finds whose project has not changed for this many days."},`+
			`"max_depth":{"type":"integer","minimum":1,"maximum":64,"description":"How many directory levels below path to search (default 32)."}`+
			`},"additionalProperties":false}`)),
		Handler: mcpkit.Handle("scan", s.log, s.scan)}
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
	// KeepReason says why a find is kept, or, for a find holding files git
	// tracks that [sweep] allow_tracked lets go, what it holds.
	KeepReason string `json:"keep_reason,omitempty"`
	// Inside names the HIGH_RISK and git-tracked files inside the find
	// (omitted when there are none); reclaim's dry run and the person's
	// question name the same.
	Inside *reclaim.Inside `json:"inside,omitempty"`
	// Radar is the risk radar's view of what inside the find is not
	// IGNORABLE (a .env in a node_modules), bounded; null when its walk
	// did not finish.
	Radar *FindRadar `json:"radar"`
}

// errCancelled answers a scan whose client went away.
var errCancelled = result.New(result.OperationFailed, "the scan was cancelled; nothing was returned")

func (s *Server) scan(ctx context.Context, req mcp.CallToolRequest, a scanArgs) result.OperationResult {
	start := time.Now()
	opts, minBytes, err := s.scanOptions(a)
	if err != nil {
		return result.Fail("scan", err, nil, start)
	}
	starts, err := s.scanStarts(a.Path)
	if err != nil {
		return result.Fail("scan", err, nil, start)
	}
	progress := mcpkit.Progress(ctx, req)
	all, dirs, err := s.walkAll(ctx, starts, opts, progress)
	if err != nil {
		return result.Fail("scan", err, nil, start)
	}
	measureAll(ctx, s.radar, all)
	if ctx.Err() != nil {
		return result.Fail("scan", errCancelled, nil, start)
	}
	matched, total := atLeast(all, minBytes)
	sortFinds(matched)
	truncated := len(matched) > s.maxFinds
	shown := matched
	if truncated {
		shown = matched[:s.maxFinds]
	}
	recheckAll(ctx, s.radar, shown)
	if ctx.Err() != nil {
		return result.Fail("scan", errCancelled, nil, start)
	}
	finds := s.issue(shown)
	progress(float64(dirs), float64(dirs), "done")
	path, rootPath := "", ""
	if a.Path != nil {
		rootPath = starts[0].root.Path()
		path = filepath.Join(rootPath, filepath.FromSlash(starts[0].rel))
	}
	reason := fmt.Sprintf("%d finds, %s reclaimable, %d directories walked", len(matched), human(total), dirs)
	if n := riskyFinds(finds); n > 0 {
		reason += fmt.Sprintf("; %d of the finds shown hold HIGH_RISK files (see each find's radar) that deleting would destroy", n)
	}
	if n := gitKept(finds); n > 0 {
		reason += fmt.Sprintf("; %d of the finds shown are kept because git tracks files in them (see keep_reason): not reclaimable", n)
	}
	if truncated {
		reason += fmt.Sprintf("; showing the %d largest (raise min_size_mb or narrow path to see others)", s.maxFinds)
	}
	return result.Success("scan", reason, map[string]any{
		"root": rootPath, "path": path, "finds": finds, "count": len(matched),
		"total_bytes": total, "truncated": truncated,
	}, start)
}

// scanOptions checks scan's arguments and turns them into walk options and
// the minimum size in bytes.
func (s *Server) scanOptions(a scanArgs) (walkOpts, int64, error) {
	opts := walkOpts{maxDepth: 32}
	if a.MaxDepth != nil {
		if *a.MaxDepth < 1 || *a.MaxDepth > 64 {
			return opts, 0, result.New(result.InvalidRequest, "max_depth must be between 1 and 64")
		}
		opts.maxDepth = *a.MaxDepth
	}
	var minBytes int64
	if a.MinSizeMB != nil {
		if *a.MinSizeMB < 0 || math.IsNaN(*a.MinSizeMB) || *a.MinSizeMB > 1e9 {
			return opts, 0, result.New(result.InvalidRequest, "min_size_mb must be a number between 0 and 1e9")
		}
		minBytes = int64(*a.MinSizeMB * 1024 * 1024)
	}
	if a.OlderThanDays != nil {
		if *a.OlderThanDays < 0 || math.IsNaN(*a.OlderThanDays) || *a.OlderThanDays > 36500 {
			return opts, 0, result.New(result.InvalidRequest, "older_than_days must be a number between 0 and 36500")
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
				return opts, 0, result.New(result.InvalidRequest,
					fmt.Sprintf("only: unknown kind or ecosystem %q; list_targets shows the valid names", reclaim.Truncate(k, 64)))
			}
			opts.only[k] = true
		}
	}
	return opts, minBytes, nil
}

// startAt is one directory a scan starts from.
type startAt struct {
	root *jail.Root
	rel  string
}

// scanStarts is every root when path is nil, else the one directory path names.
func (s *Server) scanStarts(path *string) ([]startAt, error) {
	if path == nil {
		starts := make([]startAt, 0, len(s.roots))
		for _, r := range s.roots {
			starts = append(starts, startAt{r, "."})
		}
		return starts, nil
	}
	r, rel, err := s.locate(*path)
	if err != nil {
		return nil, err
	}
	return []startAt{{r, rel}}, nil
}

// walkAll walks every start and returns the finds not newer than
// opts.olderThan, and how many directories were walked.
func (s *Server) walkAll(ctx context.Context, starts []startAt, opts walkOpts, progress func(done, total float64, msg string)) ([]*found, int, error) {
	var all []*found
	dirs := 0
	for _, st := range starts {
		d, err := st.root.OpenDir(st.rel)
		if err != nil {
			return nil, 0, err
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
		return nil, 0, errCancelled
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
	return all, dirs, nil
}

// atLeast keeps the measured finds of at least minBytes and sums their sizes.
func atLeast(all []*found, minBytes int64) ([]*found, int64) {
	matched := all[:0]
	var total int64
	for _, f := range all {
		if f.size < 0 || f.size < minBytes {
			continue
		}
		matched = append(matched, f)
		total += f.size
	}
	return matched, total
}

// issue gives each shown find a reclaim ticket and the client's view of it.
func (s *Server) issue(shown []*found) []Find {
	finds := make([]Find, 0, len(shown))
	for _, f := range shown {
		in := insideOf(f)
		keep, why := in.GitKeep(risk.GitHold{}, s.allowTracked)
		if f.keep {
			keep, why = true, "a "+KeepFile+" file protects it"
		}
		id := s.reclaimer.Issue(reclaim.Ticket{Root: f.root, Rel: f.rel, Project: f.project, Kind: f.target.Kind, ID: f.id, Size: f.size, Keep: keep, Inside: in})
		la := ""
		if !f.lastActivity.IsZero() {
			la = f.lastActivity.UTC().Format(time.RFC3339)
		}
		finds = append(finds, Find{ID: id, Path: filepath.Join(f.root.Path(), filepath.FromSlash(f.rel)),
			Kind: f.target.Kind, Ecosystem: f.target.Ecosystem, SizeBytes: f.size, LastActivity: la,
			Regenerate: f.target.Regenerate, Keep: keep, KeepReason: why, Inside: in, Radar: f.radar})
	}
	return finds
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
