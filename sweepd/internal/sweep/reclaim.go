package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/reclaim"
	"github.com/bastion-mcp/bastion/safety/result"
)

// reclaimTool is reclaim: finds deleted by id, a dry run unless confirmed.
// The description states the configured ticket lifetime ([sweep] ticket_ttl).
func (s *Server) reclaimTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("reclaim",
		"Delete directories found by scan, named only by their ids. Without confirm, or with any confirm other than the exact string \"delete\", this is a dry run that re-checks each find and reports what would be deleted. Each find is re-validated against the live filesystem right before deletion (same directory, still beneath its root, not a symlink or mount, marker still beside it, no .bastion-keep); a find that holds files git tracks is refused (POLICY_DENIED) unless the operator set [sweep] allow_tracked, with the index looked at again at that moment; each result's inside names the HIGH_RISK and git-tracked files the find holds; ids are single-use and expire "+ttlWords(s.reclaimer.TTL())+" after the scan that issued them (then scan again). "+
			"Who confirms a deletion is the policy's [approval] reclaim: under the shipped policy (\"human\") confirm: \"delete\" only asks, and the person answers in the client (MCP elicitation) after seeing every path, its size, the HIGH_RISK and git-tracked files inside it (named, with counts) and the total; the agent cannot answer for them, and declining, dismissing or not answering deletes nothing and leaves the ids valid. With \"agent\", confirm: \"delete\" alone deletes.",
		mcpkit.Annotations{Title: "Reclaim scanned directories", Destructive: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"ids":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":1000,"description":"Ids from scan."},`+
			`"confirm":{"type":"string","description":"Exactly \"delete\" to delete; anything else is a dry run."}`+
			`},"required":["ids"],"additionalProperties":false}`)),
		Handler: mcpkit.Handle("reclaim", s.log, s.reclaim)}
}

// ttlWords writes a ticket lifetime the way a person reads it: "1h",
// "90m" as "1h30m", "45s".
func ttlWords(d time.Duration) string {
	w := d.Round(time.Second).String()
	if strings.HasSuffix(w, "m0s") {
		w = strings.TrimSuffix(w, "0s")
	}
	if strings.HasSuffix(w, "h0m") {
		w = strings.TrimSuffix(w, "0m")
	}
	return w
}

type reclaimArgs struct {
	IDs     []string `json:"ids"`
	Confirm *string  `json:"confirm"`
}

// Outcome is one id's result in reclaim.
type Outcome = reclaim.Outcome

// reclaim runs the safety pipeline and puts its outcome into words.
func (s *Server) reclaim(ctx context.Context, req mcp.CallToolRequest, a reclaimArgs) result.OperationResult {
	start := time.Now()
	res, err := s.reclaimer.Run(ctx, reclaim.Request{IDs: a.IDs, Confirm: a.Confirm, Call: s.asker.For(req)})
	if res.Pending {
		return result.OperationResult{} // the question to the person is the answer
	}
	detail := map[string]any{"dry_run": res.DryRun, "results": res.Outcomes, "reclaimed_bytes": res.Reclaimed}
	if res.DryRun {
		detail["would_reclaim_bytes"] = res.WouldReclaim
	} else if res.Approval != nil {
		detail["approval"] = res.Approval
	}
	if err != nil {
		if res.Outcomes == nil {
			detail = nil
		}
		return result.Fail("reclaim", err, detail, start)
	}
	reason := reclaimReason(a, res)
	if res.OK == len(a.IDs) {
		return result.Success("reclaim", reason, detail, start)
	}
	return result.With("reclaim", res.FirstRefusal(), reason+" (see results for each refusal)", detail, start)
}

// reclaimReason sums a reclaim up and, for a dry run, names the next step.
func reclaimReason(a reclaimArgs, res reclaim.Result) string {
	switch {
	case res.DryRun && a.Confirm != nil:
		return fmt.Sprintf("dry run: confirm was %q, not \"delete\"; nothing was deleted. %d of %d would be deleted; to delete, call reclaim again with the same ids and confirm: \"delete\"", reclaim.Truncate(*a.Confirm, 32), res.OK, len(a.IDs))
	case res.DryRun:
		return fmt.Sprintf("dry run: nothing was deleted. %d of %d would be deleted; to delete, call reclaim again with the same ids and confirm: \"delete\"", res.OK, len(a.IDs))
	default:
		return fmt.Sprintf("%d of %d deleted, %s reclaimed", res.OK, len(a.IDs), human(res.Reclaimed))
	}
}
