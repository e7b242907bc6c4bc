package reclaim

import (
	"log/slog"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Recover finishes, in each root, the deletions a crash (kill -9, power
// loss) interrupted: every directory a reclaim set aside in the root's top
// directory (jail.AsidePrefix, named by the "aside" field of the reclaim's
// intent record) is deleted (jail.Root.FinishAside). Each root where it
// found something gets a "reclaim_recovered" audit event naming what was
// deleted, with the bytes and files, and the first error if one was left.
// A server calls it once at start, before it serves; it returns how many
// set-aside directories were deleted.
func Recover(roots []*jail.Root, log *audit.Log, logger *slog.Logger) int {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := 0
	for _, r := range roots {
		names, u, err := r.FinishAside()
		if len(names) == 0 && err == nil {
			continue
		}
		n += len(names)
		fields := map[string]any{"root": r.Path(), "finished": names, "removed_bytes": u.Bytes, "removed_files": u.Files}
		if err != nil {
			fields["error"] = result.Reason(err)
			logger.Warn("a reclaim interrupted by a crash could not be finished", "root", r.Path(), "reason", result.Reason(err))
		}
		if log != nil {
			if aerr := log.Event("reclaim_recovered", fields); aerr != nil {
				logger.Error("audit event reclaim_recovered failed", "root", r.Path())
			}
		}
		logger.Info("finished reclaims interrupted by a crash", "root", r.Path(), "count", len(names))
	}
	return n
}
