package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// userToolDirs are where per-person toolchains put their programs, below
// the home directory: rustup's cargo, pip's --user scripts, go install,
// npm's user prefix. check looks there, and on the server's own PATH, for
// an allowlisted command the sandbox's PATH does not have.
var userToolDirs = []string{".cargo/bin", ".local/bin", "go/bin", ".npm-global/bin", ".deno/bin", ".bun/bin"}

// systemToolDirs are toolchain directories outside the default view.
var systemToolDirs = []string{"/usr/local/go/bin", "/opt/go/bin", "/snap/bin"}

// findOutside looks for the program name where this machine has it
// outside the sandbox's PATH: on the server's PATH, in the person's
// toolchain directories and in the usual system toolchain directories.
// It returns the executable found, or "".
func findOutside(name string) string {
	dirs := filepath.SplitList(os.Getenv("PATH"))
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		for _, d := range userToolDirs {
			dirs = append(dirs, filepath.Join(h, d))
		}
	}
	dirs = append(dirs, systemToolDirs...)
	exe, err := command.Resolve(name, dirs)
	if err != nil {
		return ""
	}
	return exe
}

// toolRoots returns the trees the sandbox must be able to read for exe
// to run: the toolchain's top (the parent of its bin directory, else the
// directory), the top of where a symbolic link leads, and rustup's home
// for a rustup proxy (cargo, rustc).
func toolRoots(exe string) []string {
	top := func(p string) string {
		d := filepath.Dir(p)
		if filepath.Base(d) == "bin" {
			return filepath.Dir(d)
		}
		return d
	}
	roots := []string{top(exe)}
	if real, err := filepath.EvalSymlinks(exe); err == nil && !sandbox.Covered(real, roots) {
		roots = append(roots, top(real))
	}
	if filepath.Base(filepath.Dir(exe)) == "bin" && filepath.Base(filepath.Dir(filepath.Dir(exe))) == ".cargo" {
		rustup := os.Getenv("RUSTUP_HOME")
		if rustup == "" {
			rustup = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(exe))), ".rustup")
		}
		if fi, err := os.Stat(rustup); err == nil && fi.IsDir() {
			roots = append(roots, rustup)
		}
	}
	return roots
}

// readPathsFix says what to add to [terminal.sandbox] read_paths so that
// the trees are in the sandbox's view. A non-empty read_paths replaces the
// default system set, so a policy without read_paths is told to list the
// defaults too.
func readPathsFix(current, add []string) string {
	q := make([]string, len(add))
	for i, a := range add {
		q[i] = strconv.Quote(a)
	}
	if len(current) > 0 {
		return fmt.Sprintf("add %s to [terminal.sandbox] read_paths", strings.Join(q, ", "))
	}
	return fmt.Sprintf("set [terminal.sandbox] read_paths to the default system set (docs/terminald.md lists it) plus %s: "+
		"a read_paths list replaces the default set", strings.Join(q, ", "))
}

// missingTool is the warning for an allowlisted (or asked-about) command
// that is not on the sandbox's PATH: where this machine has it and what
// to add so commands can run it, or that it is not installed.
func missingTool(what, name string, path, readPaths []string) string {
	base := fmt.Sprintf("%s %q is not found on [terminal.env] path %s: it cannot run", what, name, list(path))
	exe := findOutside(name)
	if exe == "" {
		return base + "; it is not installed on this machine either (not on the server's PATH nor in ~/.cargo/bin, ~/.local/bin, ~/go/bin): install it, or remove it from the list"
	}
	fix := fmt.Sprintf("; this machine has it at %s: add %q to [terminal.env] path", exe, filepath.Dir(exe))
	if roots := toolRoots(exe); !sandbox.Covered(exe, readPaths) || len(roots) > 1 {
		var add []string
		for _, r := range roots {
			if !sandbox.Covered(r, readPaths) {
				add = append(add, r)
			}
		}
		if len(add) > 0 {
			fix += " and " + readPathsFix(readPaths, add)
		}
	}
	return base + fix
}

// outsideView is the warning for a command that resolves to a program
// outside the read paths, naming the trees to add.
func outsideView(what, name, exe string, readPaths []string) string {
	var add []string
	for _, r := range toolRoots(exe) {
		if !sandbox.Covered(r, readPaths) {
			add = append(add, r)
		}
	}
	if len(add) == 0 {
		add = []string{filepath.Dir(exe)}
	}
	return fmt.Sprintf("%s %q resolves to %s, outside the read paths: the sandbox cannot execute it; %s",
		what, name, exe, readPathsFix(readPaths, add))
}
