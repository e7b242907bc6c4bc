package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/command"
)

func state(dir string) func() (string, error) { return func() (string, error) { return dir, nil } }

func has(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestCheckWarnsAboutHomeDirectoryRoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	e := (&Policy{}).Effective("sweepd", CheckOptions{Roots: []string{home}, StateDir: state(t.TempDir())})
	if !has(e.Warnings, "your home directory") || len(e.Errors) != 0 {
		t.Fatalf("warnings %q errors %q", e.Warnings, e.Errors)
	}
}

func TestCheckWarnsAboutFilesystemRoot(t *testing.T) {
	e := (&Policy{}).Effective("sweepd", CheckOptions{Roots: []string{"/"}, StateDir: state(t.TempDir())})
	if !has(e.Warnings, "filesystem root") {
		t.Fatalf("warnings %q", e.Warnings)
	}
}

func TestCheckWarnsAboutAllowlistedInterpreterAndNetwork(t *testing.T) {
	p := &Policy{}
	p.Terminal.JailRoot = t.TempDir()
	p.Terminal.Allowlist.Commands = []string{"ls", "make", "npm"}
	p.Terminal.Sandbox.Network = "allow"
	e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	for _, w := range []string{`"make"`, `"npm"`, "network"} {
		if !has(e.Warnings, w) {
			t.Errorf("no warning mentioning %s: %q", w, e.Warnings)
		}
	}
	if has(e.Warnings, `"ls"`) {
		t.Errorf("ls is not an interpreter: %q", e.Warnings)
	}
}

// check must refuse what terminald refuses at startup: in the allowlist
// profile, a shell or interpreter on the allowlist is an error, whatever
// its spelling, and the error says how to allow it.
func TestCheckRefusesAllowlistedShellInAllowlistProfile(t *testing.T) {
	p := &Policy{}
	p.Terminal.JailRoot = t.TempDir()
	p.Terminal.Allowlist.Commands = []string{"ls", "python3.12", "bash"}
	e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	for _, w := range []string{`"python3.12"`, `"bash"`, `profile = "sandbox"`} {
		if !has(e.Errors, w) {
			t.Errorf("no error mentioning %s: %q", w, e.Errors)
		}
	}
	if has(e.Warnings, `"bash"`) {
		t.Errorf("an error is not also a warning: %q", e.Warnings)
	}
}

func TestCheckRefusesAuditLogInsideRoot(t *testing.T) {
	root := t.TempDir()
	e := (&Policy{}).Effective("sweepd", CheckOptions{Roots: []string{root}, StateDir: state(filepath.Join(root, "state"))})
	if !has(e.Errors, "lies inside root") {
		t.Fatalf("errors %q", e.Errors)
	}
}

func TestCheckRefusesMissingAndSymlinkedRoots(t *testing.T) {
	d := t.TempDir()
	os.Symlink(d, filepath.Join(d, "link"))
	e := (&Policy{}).Effective("sweepd", CheckOptions{Roots: []string{filepath.Join(d, "nope"), filepath.Join(d, "link")}, StateDir: state(t.TempDir())})
	if !has(e.Errors, "does not exist") || !has(e.Errors, "symbolic link") {
		t.Fatalf("errors %q", e.Errors)
	}
}

func TestCheckWithoutRootIsAnError(t *testing.T) {
	for _, srv := range []string{"sweepd", "terminald", "organizerd"} {
		t.Run(srv, func(t *testing.T) {
			e := (&Policy{}).Effective(srv, CheckOptions{StateDir: state(t.TempDir())})
			if len(e.Errors) == 0 {
				t.Errorf("%s: no error without a root", srv)
			}
		})
	}
}

func TestCheckCommandPrintsSettingsAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "code")
	os.Mkdir(root, 0o755)
	pol := filepath.Join(dir, "p.toml")
	os.WriteFile(pol, []byte("audit_log = \"state/audit.jsonl\"\n[sweep]\nroots = [\"code\"]\n"), 0o644)
	var out, errw bytes.Buffer
	if code := RunCheckCommand("sweepd", []string{"--config", pol}, &out, &errw, nil, nil); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errw.String())
	}
	for _, want := range []string{"sweep.root", root, filepath.Join(dir, "state", "audit.sweepd.jsonl"), "ok: sweepd would start"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	os.WriteFile(pol, []byte("[sweep]\nrootz = 1\n"), 0o644)
	out.Reset()
	errw.Reset()
	if code := RunCheckCommand("sweepd", []string{"--config", pol}, &out, &errw, nil, nil); code != 2 || !strings.Contains(errw.String(), "rootz") {
		t.Fatalf("bad policy: exit %d, stderr %q", code, errw.String())
	}
	out.Reset()
	if code := RunCheckCommand("organizerd", []string{"--config", pol + ".missing"}, &out, &errw, nil, nil); code != 2 {
		t.Fatalf("missing policy: exit %d", code)
	}
}

func TestCheckStrictFailsOnWarnings(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errw bytes.Buffer
	if code := RunCheckCommand("sweepd", []string{"--root", home, "--strict"}, &out, &errw, nil, nil); code != 1 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
}

// A toolchain outside the read paths cannot be executed in the sandbox:
// check says so, and names the key that fixes it; a command that is not on
// the PATH at all is named too.
func TestCheckWarnsAboutCommandOutsideReadPaths(t *testing.T) {
	bin := t.TempDir()
	tool := filepath.Join(bin, "mytool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Policy{}
	p.Terminal.JailRoot = t.TempDir()
	p.Terminal.Allowlist.Commands = []string{"ls", "mytool", "no-such-tool-here"}
	p.Terminal.Env.Path = []string{bin, "/usr/bin", "/bin"}
	e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	if !has(e.Warnings, `"mytool"`) || !has(e.Warnings, "read_paths") {
		t.Errorf("no warning for a command outside the read paths: %q", e.Warnings)
	}
	if !has(e.Warnings, `"no-such-tool-here"`) {
		t.Errorf("no warning for a command missing from the PATH: %q", e.Warnings)
	}
	if has(e.Warnings, `"ls"`) {
		t.Errorf("ls is under /usr: %q", e.Warnings)
	}
	// Once its directory is a read path, the warning goes.
	p.Terminal.Sandbox.ReadPaths = append([]string{bin}, "/usr", "/bin", "/lib", "/lib64")
	e = p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	if has(e.Warnings, `"mytool"`) {
		t.Errorf("warning although the directory is a read path: %q", e.Warnings)
	}
}

// TestCheckWarnsAboutEveryToolOfThePrograms proves check's interpreter
// warning derives from command.Programs: every tool (the kinds the
// allowlist profile does not refuse outright), in each listed spelling, is
// warned about; every shell, wrapper and interpreter is an error instead.
func TestCheckWarnsAboutEveryToolOfThePrograms(t *testing.T) {
	for _, prog := range command.Programs() {
		for _, name := range append([]string{prog.Name}, prog.Typed...) {
			t.Run(name, func(t *testing.T) {
				if !isInterpreter(name) {
					t.Fatalf("isInterpreter(%q) = false for a %s of command.Programs", name, prog.Kind)
				}
				p := &Policy{}
				p.Terminal.JailRoot = t.TempDir()
				p.Terminal.Allowlist.Commands = []string{"ls", name}
				e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
				warned := has(e.Warnings, "allowlisted interpreter "+strconv.Quote(name))
				refused := has(e.Errors, "must not contain "+strconv.Quote(name))
				if prog.Kind.Never() && (warned || !refused) || !prog.Kind.Never() && (!warned || refused) {
					t.Errorf("a %s: warnings %q errors %q", prog.Kind, e.Warnings, e.Errors)
				}
			})
		}
	}
	if isInterpreter("ls") || isInterpreter("git") {
		t.Errorf("ls or git counted as an interpreter")
	}
}
