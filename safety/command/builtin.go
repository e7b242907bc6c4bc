package command

// builtinRules are the argument rules for shipped commands that run a
// program named in the arguments. Evaluate applies them whatever the
// policy says, so a policy that allowlists git but forgets its rules does
// not also allow `git -c alias.x=!sh`. The shipped Standard section
// (shipped.go) includes every one of them, so the generated policy files
// show and explain them, and adds the rest.
var builtinRules = []Rule{
	{Command: "git", DenyArgs: []string{"-c", "--config-env"},
		Reason: "git -c and --config-env set configuration for one run, and configuration can name programs " +
			"to run (alias.x=!cmd, core.pager, core.fsmonitor, core.sshCommand, diff.external). " +
			"Run the git command without them"},
	{Command: "git", DenyArgs: []string{"--exec-path"},
		Reason: "git --exec-path changes where git looks for its own programs, so git would run programs from " +
			"any directory. Run the git command without it"},
	{Command: "git", DenyArgs: []string{"--upload-pack", "--receive-pack", "--exec"},
		Reason: "--upload-pack, --receive-pack and --exec (however abbreviated) name the program git runs for the " +
			"remote side, which can be any command. Use the default transport"},
	{Command: "git", DenyArgs: []string{"ext::*", "fd::*"},
		Reason: "ext:: and fd:: remote URLs make git run a command as the transport. Use an ordinary repository URL or path"},
	{Command: "git", DenyArgs: []string{"clone --config", "clone --template", "init --template",
		"clone --separate-git-dir", "init --separate-git-dir", "--git-dir"},
		Reason: "this sets up a repository with configuration or hook templates taken from elsewhere, or points git " +
			"at a repository directory of your choosing; either can make git run programs. Clone or init with defaults, " +
			"and run git inside the repository's working tree"},
	{Command: "git", DenyArgs: []string{"--ext-diff"},
		Reason: "--ext-diff runs the external diff program named in configuration. Leave it out: git's own diff is used"},
	{Command: "git", DenyArgs: []string{"grep --open-files-in-pager"},
		Reason: "git grep -O/--open-files-in-pager runs the named program (a pager by default) on the matching files. " +
			"Run git grep without it and read the matches from the output"},
	{Command: "git", DenyArgs: []string{"rebase --exec"},
		Reason: "git rebase --exec/-x runs a shell command after each commit. Rebase without it, and run checks as separate commands"},
	{Command: "git", DenyArgs: []string{"bisect run", "submodule foreach"},
		Reason: "git bisect run and git submodule foreach run an arbitrary command. Run the steps one by one instead"},
	{Command: "git", DenyArgs: []string{"difftool", "mergetool", "filter-branch", "send-email", "daemon",
		"instaweb", "credential", "credential-cache", "credential-store", "maintenance", "hook", "upload-pack",
		"receive-pack", "upload-archive", "shell", "imap-send", "p4", "svn", "cvsimport", "cvsserver",
		"cvsexportcommit", "archimport", "quiltimport", "send-pack", "fetch-pack", "http-backend", "http-fetch",
		"http-push", "web--browse", "fsmonitor--daemon", "remote-ext", "remote-fd", "submodule--helper", "scalar",
		"help --web", "sh-setup", "remote-http", "remote-https", "remote-ftp", "remote-ftps"},
		Reason: "this git command writes git configuration, runs configured or named programs, starts a server or " +
			"scheduler, or talks to another system. It is not available through this server"},
	{Command: "find", DenyArgs: []string{"-exec", "-execdir", "-ok", "-okdir"},
		Reason: "find -exec/-execdir/-ok/-okdir run a command for each match. Run find to list the files, then run " +
			"the command you need on them in separate calls"},
	{Command: "find", DenyArgs: []string{"-fprint", "-fprint0", "-fprintf", "-fls", "-delete"},
		Reason: "find -fprint/-fprint0/-fprintf/-fls write to a file and -delete removes files. Use -print, -print0, " +
			"-printf or -ls, which write to the output, and do not delete through find"},
	{Command: "tar", DenyArgs: []string{"--checkpoint-action", "--use-compress-program", "--to-command",
		"--rsh-command", "--rmt-command", "--info-script", "--new-volume-script"},
		Reason: "this tar option runs a program (checkpoint actions, -I/--use-compress-program, --to-command, " +
			"--rsh-command, --rmt-command, -F/--info-script). Use the built-in compressions (-z, -j, -J, --zstd) and " +
			"extract to files"},
	{Command: "sort", DenyArgs: []string{"--compress-program"},
		Reason: "sort --compress-program runs the named program on temporary files. Sort without it"},
	// "config" does not match the read-only queries (gitConfigQuery).
	{Command: "git", DenyArgs: []string{"config"},
		Reason: "git config that sets, unsets or edits configuration, or reads a file or blob, is refused: configuration " +
			"can name programs git runs (alias.x=!cmd, core.pager, core.fsmonitor, core.hooksPath). Read-only queries run: " +
			"git config --get NAME, --get-all, --get-regexp, --list (-l), git config get NAME, git config list. For commits " +
			"to carry the person's name and email, the operator sets [terminal.sandbox] git_identity = true"},
}
