package sandbox

import (
	"slices"
	"strconv"
	"strings"
)

// gitConfig are configuration entries handed to git through
// GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n. Git treats them like
// `git -c`: they are read after the system, global and repository files, so
// they win over a repository's .git/config for the same key.
var gitConfig = [][2]string{
	// Hooks would run programs named by files in the repository.
	{"core.hooksPath", "/dev/null"},
	// The file-system monitor hook runs on status, diff, add, ...
	{"core.fsmonitor", "false"},
	// A bare repository planted inside the working tree is not used
	// unless named with --git-dir (which the shipped rules refuse).
	{"safe.bareRepository", "explicit"},
	// Transports that run a command (ext::), or that start ssh or a
	// git:// proxy command from configuration.
	{"protocol.ext.allow", "never"},
	{"protocol.ssh.allow", "never"},
	{"protocol.git.allow", "never"},
	// An empty helper resets the list, so no credential helper from the
	// repository's configuration runs.
	{"credential.helper", ""},
	// Signing runs gpg.program / gpg.ssh.program.
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"push.gpgSign", "false"},
	// Pagers never start (stdout is a pipe), but say so anyway.
	{"core.pager", "cat"},
}

// gitVars are plain variables for git. Each variable here takes precedence
// over the configuration key that names a program to run.
var gitVars = []string{
	"GIT_CONFIG_NOSYSTEM=1",       // no /etc/gitconfig
	"GIT_CONFIG_GLOBAL=/dev/null", // no ~/.gitconfig (HOME is private anyway)
	"GIT_TERMINAL_PROMPT=0",       // never prompt for credentials
	"GIT_ASKPASS=false",           // wins over core.askPass
	"SSH_ASKPASS=false",
	"GIT_SSH_COMMAND=false", // wins over core.sshCommand
	"GIT_PAGER=cat",         // wins over core.pager and pager.<cmd>
	"GIT_EDITOR=:",          // ":" is git's no-op editor; wins over core.editor
	"GIT_SEQUENCE_EDITOR=:", // wins over sequence.editor
	"GIT_NO_REPLACE_OBJECTS=1",
}

// ProgramEnv returns the NAME=VALUE pairs that harden the program with the
// normalised name, for Spec.Env; nil for programs that need none.
//
// For git it turns off what a repository's own configuration (or a file
// the agent wrote into .git/) could use to run a program: hooks, the
// fsmonitor hook, credential helpers, signing programs, the askpass, ssh
// and git:// proxy commands, pagers and editors, ext:: transports, and
// implicit bare repositories; it also ignores the system and global
// configuration. Configuration keys that name programs through a name the
// repository chooses cannot be overridden this way and stay open:
// diff.external (git diff without --no-ext-diff), diff.<driver>.command and
// .textconv, filter.<driver>.clean/.smudge/.process and
// merge.<driver>.driver (selected by .gitattributes), and
// submodule.<name>.update=!cmd. Whatever they start is still confined by
// Landlock like git itself: it cannot write outside the jail, read outside
// the read paths, open TCP connections, or execute files written in the
// jail.
func ProgramEnv(name string) []string {
	if name != "git" {
		return nil
	}
	env := slices.Clone(gitVars)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(gitConfig)))
	for i, kv := range gitConfig {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// MergeEnv returns hardening pairs followed by the operator's extra pairs,
// dropping any extra pair whose name a hardening pair already sets (the
// hardening wins), so the result is valid for Spec.Env.
func MergeEnv(hardening, extra []string) []string {
	out := slices.Clone(hardening)
	set := map[string]bool{}
	for _, kv := range hardening {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	for _, kv := range extra {
		name, _, _ := strings.Cut(kv, "=")
		if !set[name] {
			out = append(out, kv)
			set[name] = true
		}
	}
	return out
}
