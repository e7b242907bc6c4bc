package sweep

import "github.com/bastion-mcp/bastion/safety/mcpkit"

// Prompts are sweepd's slash commands. Their text is fixed here; only the
// person's validated numbers are filled in.
func Prompts() []mcpkit.Prompt {
	return []mcpkit.Prompt{{
		Name:        "reclaim_disk_space",
		Title:       "Reclaim disk space",
		Description: "Find regenerable build and dependency directories, review them with the person, and delete only what they confirm.",
		Args: []mcpkit.PromptArg{
			{Name: "min_size_mb", Description: "Only directories at least this large, in MiB (default 50).", Kind: mcpkit.ArgNumber, Default: "50"},
			{Name: "older_than_days", Description: "Only projects unchanged for this many days (default 30).", Kind: mcpkit.ArgInteger, Default: "30"},
		},
		Text: `Help me reclaim disk space with sweepd. Work in this order and do not skip a step:

1. Call scan without a path (it scans every configured root) with min_size_mb ${arguments.min_size_mb} and older_than_days ${arguments.older_than_days}.
2. Show me the finds, largest first: path, kind, size, and the command that regenerates each. Leave out finds marked keep=true: a .bastion-keep file protects them.
3. Ask me which ids to delete. Do not choose for me.
4. Call reclaim with exactly the ids I chose and no confirm: that is a dry run that re-checks each find against the disk. Show me what it would delete and the total (would_reclaim_bytes).
5. Only after I say yes to that list, call reclaim again with the same ids and confirm set to "delete". Under the shipped policy sweepd then asks me itself, in my client, before it deletes anything; if it reports that I declined, dismissed the question or did not answer, nothing was deleted: do not call again unless I ask you to.

Ids expire some time after the scan that issued them; if reclaim says an id is stale or unknown, scan again rather than guessing. Never delete anything I did not name.`,
	}}
}
