// Package protect names the paths inside a writable tree that make a
// person's own tools run code later, on an unrelated action: git's hooks
// and configuration on `git status`, an editor's tasks on folder open,
// direnv on `cd`, an agent client's settings on session start, shell
// start-up files, package-manager configuration that injects code into
// every later run. DESIGN §4b: the agent controls every byte inside the
// jail, and the person will later run git, an editor or an agent client
// in that folder; such paths are protected.
//
// The package owns the list (Defaults), its policy adjustments (Set: add
// with protect, opt out per path with unprotect and a reason), matching
// (Set.Match) and, on Unix, the snapshot of what exists (Set.Scan), the
// difference two snapshots make (Diff) and the move of what a command
// planted out of the tree into a quarantine only the person restores
// (Quarantine, Restore). Enforcement while a command runs (read-only
// mounts of what exists) is the sandbox's.
//
// It refuses to: follow a symbolic link while walking or moving (every
// step is one name beneath an open directory, O_NOFOLLOW); leave the
// tree's device; overwrite anything in the quarantine; restore over an
// existing path.
package protect

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Kind says what of a protected path is protected.
type Kind int

// The kinds of protected path.
const (
	// Tree protects the path and everything beneath it: nothing may be
	// created, changed, renamed or removed there.
	Tree Kind = iota
	// File protects one name (a file, or whatever is put at that name).
	File
	// Pin protects only the name itself: it may not be created, removed,
	// renamed or replaced, but what lies beneath it (a repository's objects
	// and refs) may change. Named paths beneath it may be protected by
	// their own entries.
	Pin
)

// Entry is one protected path pattern. Pattern is slash-separated and
// matches at any depth of the tree (".git/hooks" protects
// "sub/.git/hooks/pre-commit" too); a component "*" matches any one name.
type Entry struct {
	Pattern string `json:"pattern"`
	Kind    Kind   `json:"-"`
	// Trigger says which action of the person's runs what the path holds.
	Trigger string `json:"trigger"`
	parts   []string
}

// Defaults is the built-in protected set. Each entry names the unrelated
// action that would run what a command planted there.
var Defaults = []Entry{
	{Pattern: ".git", Kind: Pin, Trigger: "a new or replaced repository: its own config and hooks run on the next git command in that folder (and on an editor's automatic git status)"},
	{Pattern: ".git/hooks", Kind: Tree, Trigger: "git runs hooks on commit, checkout, merge, rebase and push (pre-commit, post-checkout, ...)"},
	{Pattern: ".git/config", Kind: File, Trigger: "git config can name programs git runs: core.fsmonitor on every git status, core.pager, core.editor, core.sshCommand, diff and merge drivers, filter drivers on checkout, aliases"},
	{Pattern: ".git/config.worktree", Kind: File, Trigger: "per-worktree git config (extensions.worktreeConfig): the same programs as .git/config"},
	{Pattern: ".git/info", Kind: Tree, Trigger: "info/attributes selects diff, merge and filter drivers git runs; info/exclude hides files from git status"},
	{Pattern: ".git/modules/*/hooks", Kind: Tree, Trigger: "a submodule's hooks, run by git inside that submodule"},
	{Pattern: ".git/modules/*/config", Kind: File, Trigger: "a submodule's git config (core.fsmonitor and friends), read by git inside that submodule"},
	{Pattern: ".gitmodules", Kind: File, Trigger: "git submodule update and clone --recurse-submodules fetch and check out what it names"},
	{Pattern: ".husky", Kind: Tree, Trigger: "husky's hooks directory (core.hooksPath), run by git on commit and push"},
	{Pattern: ".pre-commit-config.yaml", Kind: File, Trigger: "an installed pre-commit hook runs the programs it names on git commit"},
	{Pattern: "lefthook.yml", Kind: File, Trigger: "an installed lefthook hook runs the commands it names on git commit and push"},
	{Pattern: ".vscode", Kind: Tree, Trigger: "VS Code runs tasks.json tasks with runOn folderOpen when the folder is opened, and settings.json names interpreters, terminals and MCP servers it starts"},
	{Pattern: ".idea", Kind: Tree, Trigger: "JetBrains IDEs run startup tasks and run configurations stored here when the project is opened"},
	{Pattern: ".zed", Kind: Tree, Trigger: "Zed's project tasks and settings (language servers and their commands)"},
	{Pattern: ".fleet", Kind: Tree, Trigger: "Fleet's run configurations and settings"},
	{Pattern: ".devcontainer", Kind: Tree, Trigger: "editors offer to build and start the dev container it describes (postCreateCommand, initializeCommand runs on the host)"},
	{Pattern: ".devcontainer.json", Kind: File, Trigger: "as .devcontainer/: initializeCommand runs on the host when the container is opened"},
	{Pattern: ".dir-locals.el", Kind: File, Trigger: "Emacs evaluates its eval: forms when a file in the folder is visited"},
	{Pattern: ".exrc", Kind: File, Trigger: "vim and neovim with 'exrc' set run it when started in the folder"},
	{Pattern: ".nvimrc", Kind: File, Trigger: "neovim with 'exrc' set runs it when started in the folder"},
	{Pattern: ".nvim.lua", Kind: File, Trigger: "neovim with 'exrc' set runs it when started in the folder"},
	{Pattern: ".envrc", Kind: File, Trigger: "direnv runs it on cd into the folder (once allowed, changes re-prompt only by content hash)"},
	{Pattern: ".mise.toml", Kind: File, Trigger: "mise runs its hooks and env templates on cd into the folder"},
	{Pattern: "mise.toml", Kind: File, Trigger: "mise runs its hooks and env templates on cd into the folder"},
	{Pattern: ".mcp.json", Kind: File, Trigger: "agent clients (Claude Code, others) start the MCP servers it lists when a session opens in the folder"},
	{Pattern: ".claude", Kind: Tree, Trigger: "Claude Code's project settings: hooks it runs on tool use and session start, allowed commands, MCP servers"},
	{Pattern: ".cursor", Kind: Tree, Trigger: "Cursor's project MCP servers and rules"},
	{Pattern: ".gemini", Kind: Tree, Trigger: "Gemini CLI's project settings: MCP servers and tool commands"},
	{Pattern: ".codex", Kind: Tree, Trigger: "Codex's project configuration: MCP servers and commands"},
	{Pattern: ".bashrc", Kind: File, Trigger: "bash runs it at every interactive start where the folder is HOME"},
	{Pattern: ".bash_profile", Kind: File, Trigger: "bash runs it at login where the folder is HOME"},
	{Pattern: ".bash_login", Kind: File, Trigger: "bash runs it at login where the folder is HOME"},
	{Pattern: ".bash_logout", Kind: File, Trigger: "bash runs it at logout where the folder is HOME"},
	{Pattern: ".profile", Kind: File, Trigger: "sh and bash run it at login where the folder is HOME"},
	{Pattern: ".zshrc", Kind: File, Trigger: "zsh runs it at every interactive start where the folder is HOME (or ZDOTDIR)"},
	{Pattern: ".zshenv", Kind: File, Trigger: "zsh runs it at every start where the folder is HOME (or ZDOTDIR)"},
	{Pattern: ".zprofile", Kind: File, Trigger: "zsh runs it at login where the folder is HOME (or ZDOTDIR)"},
	{Pattern: ".gitconfig", Kind: File, Trigger: "git reads it as the global config where the folder is HOME (core.fsmonitor, pager, aliases)"},
	{Pattern: ".npmrc", Kind: File, Trigger: "npm reads it on every run in the project: node-options can preload code into every npm command, script-shell replaces the shell of every script"},
	{Pattern: ".yarnrc", Kind: File, Trigger: "yarn 1 reads it on every run: yarn-path makes every yarn command run the file it names"},
	{Pattern: ".yarnrc.yml", Kind: File, Trigger: "yarn 2+ reads it on every run: yarnPath makes every yarn command run the file it names"},
	{Pattern: ".pnpmfile.cjs", Kind: File, Trigger: "pnpm runs its hooks on every install"},
	{Pattern: ".cargo/config", Kind: File, Trigger: "cargo reads it on every run: build.rustc-wrapper, target runners and aliases run programs it names"},
	{Pattern: ".cargo/config.toml", Kind: File, Trigger: "cargo reads it on every run: build.rustc-wrapper, target runners and aliases run programs it names"},
}

// Unprotect opts one default (or added) pattern out, with the operator's reason.
type Unprotect struct {
	Pattern string
	Reason  string
}

// Set is a protected set: Defaults plus the policy's additions, minus its
// opt-outs. The zero Set protects nothing; use New.
type Set struct {
	mu       sync.Mutex
	scanMu   sync.Mutex
	trees    map[string]*treeCache // Scan's memory of each tree (Linux)
	smu      sync.Mutex
	sessions map[string]*session // the running commands' snapshots (Begin)
	entries  []Entry
	// Unprotected lists the opt-outs in force, for the docs and answers.
	Unprotected []Unprotect
}

// New builds the set from Defaults, adds (each a Tree: the path and all
// beneath it) and opt-outs. A pattern that is absolute, empty, holds ".."
// or a NUL, or an opt-out of a pattern not in the set or without a reason
// is INVALID_REQUEST.
func New(add []string, unprotect []Unprotect) (*Set, error) {
	s := &Set{}
	seen := map[string]bool{}
	for _, e := range Defaults {
		e.parts = strings.Split(e.Pattern, "/")
		s.entries = append(s.entries, e)
		seen[e.Pattern] = true
	}
	for _, a := range add {
		p, err := clean(a)
		if err != nil {
			return nil, err
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		s.entries = append(s.entries, Entry{Pattern: p, Kind: Tree, parts: strings.Split(p, "/"),
			Trigger: "added by the policy ([terminal.sandbox] protect)"})
	}
	for _, u := range unprotect {
		p, err := clean(u.Pattern)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(u.Reason) == "" {
			return nil, result.New(result.InvalidRequest, fmt.Sprintf("unprotect %q needs a reason", p))
		}
		kept, found := s.entries[:0], false
		for _, e := range s.entries {
			if e.Pattern == p {
				found = true
				continue
			}
			kept = append(kept, e)
		}
		if !found {
			return nil, result.New(result.InvalidRequest, fmt.Sprintf(
				"unprotect %q names no protected path (see docs/terminald.md for the list)", p))
		}
		s.entries = kept
		s.Unprotected = append(s.Unprotected, Unprotect{Pattern: p, Reason: u.Reason})
	}
	return s, nil
}

// Default is the built-in set with no adjustment.
func Default() *Set {
	s, _ := New(nil, nil)
	return s
}

func clean(p string) (string, error) {
	if p == "" || strings.ContainsAny(p, "\x00\\") || strings.HasPrefix(p, "/") {
		return "", result.New(result.InvalidRequest, fmt.Sprintf("protected path %q must be relative, slash-separated and non-empty", p))
	}
	c := path.Clean(p)
	for _, part := range strings.Split(c, "/") {
		if part == ".." || part == "." || part == "" {
			return "", result.New(result.InvalidRequest, fmt.Sprintf("protected path %q must not hold . or .. components", p))
		}
	}
	return c, nil
}

// Entries returns the patterns in force, sorted.
func (s *Set) Entries() []Entry {
	out := append([]Entry(nil), s.entries...)
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	return out
}

// Match reports whether rel (slash-separated, relative to the tree's top)
// is protected, and by which entry: rel is the entry's path at some depth,
// or lies beneath a Tree entry. A Pin entry matches only its own name.
func (s *Set) Match(rel string) (Entry, bool) {
	if s == nil || rel == "" || rel == "." {
		return Entry{}, false
	}
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for _, e := range s.entries {
		n := len(e.parts)
		for i := 0; i+n <= len(parts); i++ {
			if !partsMatch(parts[i:i+n], e.parts) {
				continue
			}
			if i+n == len(parts) || e.Kind == Tree {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// MayHoldProtected reports whether a directory at rel could hold a
// protected path beneath it that Match would not already report for rel
// itself: the scan descends only where this holds inside a repository's
// .git (its objects and refs are never walked).
func (s *Set) mayHoldProtected(parts []string) bool {
	// Inside a .git directory, only the named entries matter.
	for i, p := range parts {
		if p != ".git" {
			continue
		}
		rest := parts[i+1:]
		for _, e := range s.entries {
			if len(e.parts) < 2 || e.parts[0] != ".git" {
				continue
			}
			ep := e.parts[1:]
			if len(rest) < len(ep) && partsMatch(rest, ep[:len(rest)]) {
				return true
			}
		}
		return false
	}
	return true
}

func partsMatch(got, want []string) bool {
	for i := range want {
		if want[i] != "*" && want[i] != got[i] {
			return false
		}
	}
	return true
}

// Reason is the sentence an answer gives for a protected path: what runs
// it and the key that allows the change.
func (e Entry) Reason() string {
	return fmt.Sprintf("%s is protected: %s. To let commands change it, add it to [terminal.sandbox] unprotect with a reason",
		e.Pattern, e.Trigger)
}

// Change is one protected path a command created, changed, replaced or
// removed, and what was done about it (detail.protected).
type Change struct {
	Path string `json:"path"`
	// Attempted is create, change, replace or remove.
	Attempted string `json:"attempted"`
	// ProtectedBy is the pattern that protects Path.
	ProtectedBy string `json:"protected_by"`
	// Outcome says what the jail holds now: "moved to quarantine",
	// "moved to quarantine; original restored", "original restored", or
	// why the original could not be put back.
	Outcome string `json:"outcome"`
	// Quarantine names what was moved out ("RUN/N"): the person restores
	// it with `terminald quarantine restore`.
	Quarantine string `json:"quarantine,omitempty"`
}
