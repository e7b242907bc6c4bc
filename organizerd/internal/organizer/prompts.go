package organizer

import "github.com/bastion-mcp/bastion/safety/mcpkit"

// Prompts are organizerd's slash commands. Their text is fixed here; only
// the person's validated number is filled in.
func Prompts() []mcpkit.Prompt {
	return []mcpkit.Prompt{{
		Name:        "tidy_inbox",
		Title:       "Tidy the inbox",
		Description: "Plan how to sort the workspace's top-level files into category folders, review the plan with the person, apply it, and say how to undo it.",
		Args: []mcpkit.PromptArg{
			{Name: "max_moves", Description: "Ask before applying a plan with more moves than this (default 50).", Kind: mcpkit.ArgInteger, Default: "50"},
		},
		Text: `Tidy my inbox with organizerd:

1. Call plan_organize. It changes nothing.
2. Show me the plan: how many files go to each folder, and the files it skips with the reason for each. Do not try to move skipped files yourself; they are skipped on purpose.
3. If the plan has more than ${arguments.max_moves} moves, or anything in it surprises you, ask me before applying. Otherwise tell me what you are about to do.
4. Call apply_plan with the plan_id. Report what moved and anything that was refused. If the plan is stale, plan again; do not reuse an old plan_id.
5. Tell me that undo_last_action puts every file of this plan back, and redo_last_action re-applies it.`,
	}}
}
