package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/result"
)

// reclaimTool is reclaim: finds deleted by id, a dry run unless confirmed.
func (s *Server) reclaimTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("reclaim",
		"Delete directories found by scan, named only by their ids. Without confirm, or with any confirm other than the exact string \"delete\", this is a dry run that re-checks each find and reports what would be deleted. Each find is re-validated against the live filesystem right before deletion (same directory, still beneath its root, not a symlink or mount, marker still beside it, no .bastion-keep); ids are single-use and expire after an hour.",
		mcpkit.Annotations{Title: "Reclaim scanned directories", Destructive: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"ids":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":1000,"description":"Ids from scan."},`+
			`"confirm":{"type":"string","description":"Exactly \"delete\" to delete; anything else is a dry run."}`+
			`},"required":["ids"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle("reclaim", s.log, s.reclaim)}
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
