package terminal

import "github.com/bastion-mcp/bastion/safety/mcpkit"

// Prompts are terminald's slash commands. Their text is fixed here; only
// the person's validated one-line arguments are filled in.
func Prompts() []mcpkit.Prompt {
	return []mcpkit.Prompt{{
		Name:        "run_tests",
		Title:       "Run the project's tests",
		Description: "Find the project's test command, check it with explain_command, run it and summarise the failures.",
		Args: []mcpkit.PromptArg{
			{Name: "command", Description: "The test command to run, if you know it (for example: go test ./...).", Kind: mcpkit.ArgLine, Default: "(not given: choose it)"},
		},
		Text: `Run this project's tests with terminald.

Test command given by me: ${arguments.command}

1. If I gave no command, work out the usual one for this project from its build files (for example go test ./..., npm test, pytest, cargo test, make test). Use run_command with read-only commands such as ls to look, not guesses.
2. Call explain_command on the test command first. If the decision is deny, tell me the rule and its reason and stop; do not try other spellings to get around it.
3. Run it with run_command. If it times out or hits a limit, say so; do not rerun it in a loop. If the suite is known to take longer than the timeout (a long integration suite, a watcher), start it with run_command background: true instead, follow it with read_output (wait_ms, and a filter such as FAIL|panic|Error to see only failures), and stop it with stop_session when you are done with it.
4. Summarise: how many tests passed and failed, and for each failure the test name and the first lines of its error. Do not change any file unless I ask.`,
	}, {
		Name:        "explain_before_running",
		Title:       "Explain before running",
		Description: "Show how terminald would judge a command, and run it only if it is allowed and the person agrees.",
		Args: []mcpkit.PromptArg{
			{Name: "command", Description: "The command line to check.", Required: true, Kind: mcpkit.ArgLine},
		},
		Text: `Before running anything, call explain_command with this command line: ${arguments.command}

Tell me the decision (allow, ask or deny), the rule that decided and its reason, the program it resolves to, the working directory, the confinement and limits, and any risk notes about paths it names. If it is denied, stop there. If it is allowed, ask me whether to run it, and call run_command with the same command line only after I say yes. If the decision is ask, tell me that when run_command runs it my client will ask me to approve it (allow once, allow this exact command for the rest of the session, or deny), and that only I can answer that question; call run_command only after I say yes here, and if I deny it in the client, do not try again unless I tell you to.`,
	}}
}
