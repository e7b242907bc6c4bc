package command

import "slices"

// Kind is what a program in the Programs table does with its arguments.
type Kind uint8

// The kinds of program that run code they are given. Shells, wrappers and
// interpreters are refused in the allowlist profile whatever the policy
// says (see Never); tools may be allowlisted, and "check" warns when one
// is.
const (
	// Shell runs whatever command its arguments contain.
	Shell Kind = iota + 1
	// Wrapper runs another program named in its arguments.
	Wrapper
	// Interpreter takes a program as its arguments (or a file of one).
	Interpreter
	// Tool runs code it finds in files or fetches (build tools, package
	// managers, editors, container runners). The allowlist profile allows
	// it, but the command policy then no longer bounds what runs.
	Tool
)

// String returns the kind's word: "shell", "wrapper", "interpreter" or "tool".
func (k Kind) String() string {
	switch k {
	case Shell:
		return "shell"
	case Wrapper:
		return "wrapper"
	case Interpreter:
		return "interpreter"
	case Tool:
		return "tool"
	}
	return "unknown"
}

// Never reports whether the allowlist profile refuses every program of
// this kind (shells, wrappers and interpreters do; tools do not).
func (k Kind) Never() bool { return k == Shell || k == Wrapper || k == Interpreter }

// Why is the reason given for refusing, or warning about, a program of
// this kind.
func (k Kind) Why() string {
	switch k {
	case Shell:
		return "it is a shell: it runs whatever command its arguments contain"
	case Wrapper:
		return "it is a wrapper: it runs another program named in its arguments, which would bypass the allowlist"
	case Interpreter:
		return "it is an interpreter: its arguments are a program, which would bypass every argument rule"
	case Tool:
		return "it runs whatever program its arguments name, so the command policy no longer bounds what runs"
	}
	return ""
}

// Program is one entry of the Programs table.
type Program struct {
	// Name is the normalised name (Name(p.Name) == p.Name).
	Name string
	// Kind says what the program does with its arguments.
	Kind Kind
	// Typed are other common spellings people type (python3, pwsh,
	// Rscript); each normalises to Name. A content scanner may echo one of
	// them, or Name, as an interpreter's name.
	Typed []string
}

// programs is the one list of shells, wrappers, interpreters and tools
// that run code they are given. Everything else derives from it: the
// never table (refused in the allowlist profile), config's warning about
// allowlisted tools, the shipped denylist's groups and the risk radar's
// shebang labels.
var programs = func() []Program {
	var ps []Program
	add := func(k Kind, names ...string) {
		for _, n := range names {
			ps = append(ps, Program{Name: n, Kind: k, Typed: typed[n]})
		}
	}
	add(Shell, "sh", "bash", "zsh", "dash", "ksh", "ash", "fish", "csh", "tcsh", "busybox", "toybox",
		"powershell", "cmd", "nu", "elvish", "xonsh", "yash", "rc", "es")
	add(Wrapper, "env", "xargs", "timeout", "nice", "nohup", "setsid", "stdbuf", "time", "chroot", "unshare",
		"nsenter", "flock", "ionice", "taskset", "chrt", "script", "watch", "strace", "ltrace",
		"gdb", "coreutils", "command", "builtin", "exec", "eval", "doas", "sudo", "su", "pkexec",
		"runuser", "setpriv", "capsh", "firejail", "bwrap", "systemd-run", "parallel", "expect",
		"start-stop-daemon", "run-parts", "entr", "sg", "newgrp")
	add(Interpreter, "python", "perl", "ruby", "node", "php", "lua", "tclsh", "wish", "awk", "sed", "irb",
		"deno", "bun", "osascript", "jshell", "guile", "racket", "r", "rscript", "julia")
	add(Tool, "make", "npm", "npx", "pip", "vim", "emacs", "docker")
	return ps
}()

// typed are the spellings, other than the normalised name, that the
// Programs table lists for a program.
var typed = map[string][]string{
	"python":     {"python2", "python3"},
	"powershell": {"pwsh"},
	"awk":        {"gawk"},
	"r":          {"R"},
	"rscript":    {"Rscript"},
}

// Programs returns a copy of the table of programs that run code they are
// given, grouped by kind (shells, wrappers, interpreters, tools).
func Programs() []Program {
	out := slices.Clone(programs)
	for i := range out {
		out[i].Typed = slices.Clone(out[i].Typed)
	}
	return out
}

// Lookup finds name (any spelling; it is normalised) in the Programs table.
func Lookup(name string) (Program, bool) {
	p, ok := byName[Name(name)]
	return p, ok
}

// ProgramsOf returns the normalised names of the table's programs of kind
// k, in table order.
func ProgramsOf(k Kind) []string {
	var out []string
	for _, p := range programs {
		if p.Kind == k {
			out = append(out, p.Name)
		}
	}
	return out
}

var byName = func() map[string]Program {
	m := make(map[string]Program, len(programs))
	for _, p := range programs {
		m[p.Name] = p
	}
	return m
}()

// never maps the normalised names of the programs no policy in the
// allowlist profile can allow (shells, wrappers, interpreters) to why:
// each runs a command named in its arguments, so allowing it would make
// the allowlist meaningless. The sandbox profile (Policy.Sandboxed) may
// allowlist them. It is derived from the Programs table.
var never = func() map[string]string {
	m := map[string]string{}
	for _, p := range programs {
		if p.Kind.Never() {
			m[p.Name] = p.Kind.Why()
		}
	}
	return m
}()

// Never reports whether name (any spelling; it is normalised) is a shell,
// wrapper or interpreter that only the sandbox profile may allowlist, and
// why.
func Never(name string) (why string, ok bool) {
	why, ok = never[Name(name)]
	return why, ok
}
