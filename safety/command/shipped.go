package command

// Section is a [terminal] command policy that Bastion ships: allowlist,
// ask list, denylist and argument rules, in commented groups. It is the one source
// of the shipped policy files' command sections: policygen renders it as
// TOML (`make policy-docs`) and `make policy-check` fails when a file
// differs. A terminal rule change is an edit here plus the corpus
// (testdata/corpus.tsv).
type Section struct {
	// AllowNote, AskNote, DenyNote and RulesNote are comment lines written
	// before the allowlist, the ask list, the denylist and the first rule.
	AllowNote, AskNote, DenyNote, RulesNote []string
	Allow                                   []Group
	// Ask is [terminal.ask] commands: every run of these asks a person.
	Ask   []Group
	Deny  []Group
	Rules []RuleGroup
}

// Group is a commented run of command names.
type Group struct {
	Comment string
	Names   []string
}

// RuleGroup is a run of argument rules under one heading.
type RuleGroup struct {
	Heading string
	Rules   []Rule
}

// Policy flattens s into the Policy it describes (the allowlist profile;
// set Sandboxed for the sandbox profile).
func (s Section) Policy() Policy {
	var p Policy
	for _, g := range s.Allow {
		p.Allow = append(p.Allow, g.Names...)
	}
	for _, g := range s.Ask {
		p.Ask = append(p.Ask, g.Names...)
	}
	for _, g := range s.Deny {
		p.Deny = append(p.Deny, g.Names...)
	}
	for _, g := range s.Rules {
		p.Rules = append(p.Rules, g.Rules...)
	}
	return p
}

// Standard is the shipped allowlist-profile command policy: the
// [terminal] section of policies/policy.toml and policy.example.toml, and
// all of policies/terminal-section.toml, which the corpus is judged
// against. Its denylist repeats every shell, wrapper, interpreter and tool
// of Programs, and its rules repeat every built-in rule.
func Standard() Section {
	network := []string{"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "telnet", "ftp"}
	deny := []Group{
		{"destroy, escalate, or change ownership and modes",
			[]string{"rm", "rmdir", "shred", "unlink", "dd", "mkfs", "fdisk", "sfdisk", "parted", "wipefs"}},
		{"", []string{"mount", "umount", "swapon", "swapoff"}},
		{"", []string{"sudo", "su", "doas", "pkexec", "runuser"}},
		{"", []string{"chmod", "chown", "chgrp", "chattr", "setfacl", "ln"}},
		{"", []string{"shutdown", "reboot", "halt", "poweroff", "systemctl", "launchctl", "kill", "killall", "pkill"}},
		{"", []string{"crontab", "at"}},
		{"network", network},
	}
	for _, k := range []Kind{Shell, Wrapper, Interpreter, Tool} {
		deny = append(deny, Group{kindGroups[k], unlisted(deny, ProgramsOf(k))})
	}
	deny = append(deny, Group{"pagers and editors that can start a shell, and tee, which writes files",
		[]string{"nano", "less", "more", "man", "tee"}})
	return Section{
		Allow: []Group{{"", []string{"ls", "cat", "echo", "pwd", "head", "tail", "wc", "grep", "sort", "find",
			"tar", "git", "touch", "mkdir", "cp", "mv", "diff", "stat"}}},
		AskNote: askNote,
		Deny:    deny,
		Rules: []RuleGroup{
			{"git", append(builtinFor("git"), gitForcePush, gitPushDelete, gitOutput, gitPaginate, gitDiscard, gitApplyUnsafe)},
			{"find", builtinFor("find")},
			{"tar", append(builtinFor("tar"), tarAbsolute, tarRemove, tarDotGit)},
			{"sort", append(builtinFor("sort"), sortOutput)},
			{"file writers: cp, mv, touch, mkdir", []Rule{cpLink, cpDotGit, mvDotGit, touchDotGit, mkdirDotGit}},
			{"tail", []Rule{tailFollow}},
			{"ask: a person approves (git)", []Rule{gitPushAsk, gitDropAsk}},
		},
	}
}

// askNote explains the shipped ask tier above the (empty) [terminal.ask]
// list of Standard.
var askNote = []string{
	"Every run of a command listed here needs a person's approval (it need not",
	"be allowlisted too). None is shipped: each allowlisted command is safe to",
	"run or refused outright, and the arguments that need a person are the",
	"ask_args of the rules below (git push, deleting branches and stashes,",
	"discarding uncommitted changes). Deny wins over ask: a denylisted or",
	"never-allowed program is refused, never asked about.",
}

// devAskNote is askNote for Dev, where the kernel boundary is the
// guarantee and the ask tier, like the denylist, judges direct requests.
var devAskNote = []string{
	"Every run of a command listed here needs a person's approval (it need not",
	"be allowlisted too). None is shipped; the ask_args of the rules below ask",
	"a person before a direct request pushes or drops work (a script can still",
	"do it inside the jail). Deny wins over ask: a denylisted program is",
	"refused, never asked about.",
}

// kindGroups are the denylist comments of the Programs kinds.
var kindGroups = map[Kind]string{
	Shell:       "shells (safety/command's Programs table; never allowed in this profile)",
	Wrapper:     "wrappers that run another program (Programs table; never allowed in this profile)",
	Interpreter: "interpreters (Programs table; never allowed in this profile)",
	Tool:        "tools that run programs by design (Programs table)",
}

// Dev is the shipped sandbox-profile command policy of
// policies/dev.example.toml: shells, interpreters and build tools
// allowlisted (the kernel boundary is the guarantee), requests for
// escalation and network clients refused, and the rules that keep a direct
// request from discarding work.
func Dev() Section {
	return Section{
		AllowNote: []string{"Names as you type them: python3 covers python3.12 and python."},
		Allow: []Group{
			{"shells and build tools", []string{"bash", "sh", "make"}},
			{"compilers, interpreters and test runners", []string{"cc", "gcc", "go", "python3", "pytest", "node", "npm", "cargo"}},
			{"version control", []string{"git"}},
			{"file tools", []string{"ls", "cat", "echo", "pwd", "head", "tail", "wc", "grep", "sort", "find",
				"tar", "touch", "mkdir", "cp", "mv", "diff", "stat"}},
		},
		DenyNote: []string{
			"With a shell allowlisted, this list refuses direct requests only: a",
			"script can still start any program present in the command's view. Under",
			"no_new_privs and without capabilities none of these could gain anything;",
			"they are listed so that a request for them is refused with a clear reason.",
		},
		Deny: []Group{
			{"", []string{"sudo", "su", "doas", "pkexec", "runuser"}},
			{"", []string{"mount", "umount", "shutdown", "reboot", "halt", "poweroff", "systemctl"}},
			{"", []string{"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync"}},
		},
		RulesNote: []string{
			"Argument rules still apply to direct requests (the built-in ones for git,",
			"find, tar and sort always do). These keep a direct request from",
			"discarding work or rewriting shared history; a script can still do it",
			"inside the jail, so commit or back up the jail.",
		},
		AskNote: devAskNote,
		Rules: []RuleGroup{
			{"", []Rule{gitForcePush, gitPushDelete, gitDiscard, tailFollow}},
			{"ask: a person approves (git)", []Rule{gitPushAsk, gitDropAsk}},
		},
	}
}

// unlisted returns the names not already in one of groups.
func unlisted(groups []Group, names []string) []string {
	seen := map[string]bool{}
	for _, g := range groups {
		for _, n := range g.Names {
			seen[n] = true
		}
	}
	var out []string
	for _, n := range names {
		if !seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// builtinFor returns the built-in rules for command, in order.
func builtinFor(command string) []Rule {
	var out []Rule
	for _, r := range builtinRules {
		if r.Command == command {
			out = append(out, r)
		}
	}
	return out
}

// The shipped argument rules that are not built in: a policy carries them
// or not. policies/terminal-rules.md explains each.
var (
	gitForcePush = Rule{Command: "git",
		DenyArgs: []string{"push --force", "push --force-with-lease", "push --force-if-includes", "push +*", "push --mirror"},
		Reason: "this is a force-push (-f, --force, --force-with-lease, --force-if-includes, a +refspec, or --mirror): " +
			"it rewrites history others share and can destroy their commits. Push without forcing; if the push is " +
			"rejected, fetch and merge or rebase first, or ask the user"}
	gitPushDelete = Rule{Command: "git", DenyArgs: []string{"push --delete", "push :*", "push --prune"},
		Reason: "this push deletes branches or tags on the remote (--delete, -d, :branch, --prune). Ask the user to do it"}
	gitOutput = Rule{Command: "git", DenyArgs: []string{"--output"},
		Reason: "--output writes the result to a file instead of the output. Leave it out and read the result from the command's output"}
	gitPaginate = Rule{Command: "git", DenyArgs: []string{"--paginate"},
		Reason: "git -p/--paginate runs a pager program. Run the command without it: output is captured, not paged"}
	gitDiscard = Rule{Command: "git", DenyArgs: []string{"clean --force", "reset --hard", "rm --force"},
		Reason: "this discards work that git cannot give back (git clean -f deletes untracked files, reset --hard drops " +
			"uncommitted changes, rm -f removes modified files). Commit or stash first, or ask the user to do it"}
	gitApplyUnsafe = Rule{Command: "git", DenyArgs: []string{"apply --unsafe-paths"},
		Reason: "git apply --unsafe-paths lets a patch write outside the working tree. Apply patches without it"}
	tarAbsolute = Rule{Command: "tar", DenyArgs: []string{"--absolute-names"},
		Reason: "tar -P/--absolute-names keeps leading / and .. in member names, so extraction can write outside the " +
			"working directory. Leave it out: tar strips them"}
	tarRemove = Rule{Command: "tar", DenyArgs: []string{"--remove-files", "--recursive-unlink"},
		Reason: "tar --remove-files deletes the files it archived and --recursive-unlink deletes directories before " +
			"extracting; deleting is not available through this server. Archive or extract without it"}
	tarDotGit = Rule{Command: "tar", DenyArgs: []string{"path:.git"},
		Reason: "this names a path inside a .git directory; writing there (configuration, hooks) can make later git " +
			"commands run programs. Leave .git out of the archive operation"}
	sortOutput = Rule{Command: "sort", DenyArgs: []string{"--output"},
		Reason: "sort -o/--output writes to a file, and can overwrite any file it may write. Read the sorted lines from the output instead"}
	cpLink = Rule{Command: "cp", DenyArgs: []string{"--symbolic-link", "--link"},
		Reason: "cp -s/--symbolic-link and -l/--link create links instead of copies; a link can reach a file outside " +
			"the working directory, and writing through it changes that file. Copy the file"}
	cpDotGit = Rule{Command: "cp", DenyArgs: []string{"path:.git"},
		Reason: "this writes or reads through a .git directory; a file copied into .git (config, hooks) can make later " +
			"git commands run programs. Use git commands to change a repository"}
	mvDotGit = Rule{Command: "mv", DenyArgs: []string{"path:.git"},
		Reason: "this moves something into, out of or onto a .git directory; a changed .git (config, hooks) can make " +
			"later git commands run programs. Use git commands to change a repository"}
	touchDotGit = Rule{Command: "touch", DenyArgs: []string{"path:.git"},
		Reason: "this creates or changes a file inside a .git directory (hooks, config, lock files). Use git commands to change a repository"}
	mkdirDotGit = Rule{Command: "mkdir", DenyArgs: []string{"path:.git"},
		Reason: "this creates a .git directory or one inside it; a hand-made .git can carry configuration that makes " +
			"git run programs. Use git init"}
	// The ask rules: the work stays possible, but a person, not the agent,
	// approves it. git clean -f, reset --hard and rm -f stay in gitDiscard's
	// deny_args: deny wins, and an operator whose approval falls back to
	// the agent's confirmation would otherwise let the agent discard work.
	gitPushAsk = Rule{Command: "git", AskArgs: []string{"push"},
		Reason: "git push publishes commits to a remote that others share; once someone has fetched them they cannot " +
			"be taken back (that needs a force-push, which this policy refuses), so a person approves every push"}
	gitDropAsk = Rule{Command: "git", AskArgs: []string{"branch --delete", "stash drop", "stash clear",
		"checkout --force", "switch --discard-changes", "switch --force"},
		Reason: "this drops work that git keeps nowhere else, or only where it is hard to find (branch -d/-D deletes a " +
			"branch, -D even with unmerged commits; stash drop and stash clear delete stashed changes; checkout -f and " +
			"switch -f/--discard-changes throw away uncommitted changes), so a person approves it"}
	tailFollow = Rule{Command: "tail", DenyArgs: []string{"--follow"},
		Reason: "tail -f/-F/--follow never ends, so the call would only stop at the timeout. Use tail -n N to read the last lines"}
)
