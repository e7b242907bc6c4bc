package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWarnsWhenACopiedPolicysRelativePathLeavesItsFolder: the
// example policies' "../.demo/..." trap. A relative path that leads out of
// the policy file's folder is warned about, with its line and where it
// lands; one inside the folder and a ~/ path are not, and ~/ expands to
// the home directory.
func TestCheckWarnsWhenACopiedPolicysRelativePathLeavesItsFolder(t *testing.T) {
	clearEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "copy", "jail"), 0o755); err != nil {
		t.Fatal(err)
	}
	pol := write(t, base, "copy/policy.toml", "audit_log = \"../.demo/state/audit.jsonl\"\n[terminal]\njail_root = \"jail\"\n[terminal.state]\ndir = \"~/state\"\n")
	var out, errb bytes.Buffer
	if code := RunCheckCommand("terminald", []string{"--config", pol}, &out, &errb, func() (string, error) { return home, nil }, nil); code == 2 {
		t.Fatalf("check did not load the policy: %s", errb.String())
	}
	got := out.String()
	want := `audit_log = "../.demo/state/audit.jsonl" (line 1) is relative, so it is taken from the policy file's folder ` +
		filepath.Join(base, "copy") + " and leads out of it, to " + filepath.Join(base, ".demo", "state", "audit.jsonl")
	if !strings.Contains(got, "warning: "+want) || !strings.Contains(got, "write an absolute path or one starting with ~/") {
		t.Fatalf("no warning about audit_log leaving the folder:\n%s", got)
	}
	if strings.Contains(got, `jail_root = "jail"`) || strings.Contains(got, `dir = "~/state"`) {
		t.Fatalf("warned about a path that stays in the folder or starts with ~/:\n%s", got)
	}
	if !strings.Contains(got, filepath.Join(home, "state")) {
		t.Fatalf("~/state did not expand to the home directory:\n%s", got)
	}
}

// TestCheckNamesTheReadPathToAddForAnAllowlistedToolOutsideTheView: an
// allowlisted program the sandbox's PATH lacks but this machine has in a
// person's toolchain (rustup's ~/.cargo/bin) is named with the PATH entry
// and read paths to add; one that is not installed anywhere says so; one
// on the PATH but outside the read paths gets the tree to add.
func TestCheckNamesTheReadPathToAddForAnAllowlistedToolOutsideTheView(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("RUSTUP_HOME", "")
	t.Setenv("PATH", "/usr/bin:/bin")
	bin := filepath.Join(home, ".cargo", "bin")
	for _, d := range []string{bin, filepath.Join(home, ".rustup")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tool := filepath.Join(bin, "bastion-test-cargo")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	term := Terminal{}
	term.Allowlist.Commands = []string{"bastion-test-cargo", "bastion-not-installed"}
	u := term.Unrunnable()
	if len(u) != 2 {
		t.Fatalf("Unrunnable: %+v", u)
	}
	for _, w := range []string{"this machine has it at " + tool, `add "` + bin + `" to [terminal.env] path`,
		`read_paths to the default system set`, `"` + filepath.Join(home, ".cargo") + `"`, `"` + filepath.Join(home, ".rustup") + `"`} {
		if !strings.Contains(u[0].Why, w) {
			t.Errorf("warning %q does not say %q", u[0].Why, w)
		}
	}
	if !strings.Contains(u[1].Why, "not installed on this machine") || !strings.Contains(u[1].Why, "remove it from the list") {
		t.Errorf("warning %q does not say the tool is not installed", u[1].Why)
	}

	term.Allowlist.Commands = []string{"bastion-test-cargo"}
	term.Env.Path = []string{bin, "/usr/bin", "/bin"}
	term.Sandbox.ReadPaths = []string{"/usr", "/bin", "/lib"}
	u = term.Unrunnable()
	if len(u) != 1 || !strings.Contains(u[0].Why, "outside the read paths") ||
		!strings.Contains(u[0].Why, `add "`+filepath.Join(home, ".cargo")+`", "`+filepath.Join(home, ".rustup")+`" to [terminal.sandbox] read_paths`) {
		t.Fatalf("Unrunnable with read_paths: %+v", u)
	}
}

// TestCheckTakesTheFolderAsTheServerDoes: `check --root DIR` sets
// terminald's jail and organizerd's workspace over the policy's, as the
// server's own --root does, and two different folders are refused.
func TestCheckTakesTheFolderAsTheServerDoes(t *testing.T) {
	clearEnv(t)
	home := t.TempDir()
	dir := t.TempDir()
	pol := write(t, t.TempDir(), "policy.toml", "[organizer]\nworkspace_root = \"/nonexistent-workspace\"\n[terminal]\njail_root = \"/nonexistent-jail\"\n")
	state := func() (string, error) { return home, nil }
	for server, key := range map[string]string{"organizerd": "organizer.workspace_root", "terminald": "terminal.jail_root"} {
		var out, errb bytes.Buffer
		RunCheckCommand(server, []string{"--config", pol, "--root", dir}, &out, &errb, state, nil)
		if !strings.Contains(out.String(), key) || !strings.Contains(out.String(), dir) || strings.Contains(out.String(), "/nonexistent-") {
			t.Errorf("%s check --root: %s%s", server, out.String(), errb.String())
		}
		out.Reset()
		errb.Reset()
		RunCheckCommand(server, []string{"--config", pol, dir}, &out, &errb, state, nil)
		if !strings.Contains(out.String(), key) || !strings.Contains(out.String(), dir) || strings.Contains(out.String(), "/nonexistent-") {
			t.Errorf("%s check DIR: %s%s", server, out.String(), errb.String())
		}
		out.Reset()
		errb.Reset()
		if code := RunCheckCommand(server, []string{"--config", pol, dir, "--strict"}, &out, &errb, state, nil); code != 2 ||
			!strings.Contains(errb.String(), "flags go before the folder") {
			t.Errorf("%s check DIR --strict: code %d, %s", server, code, errb.String())
		}
		out.Reset()
		errb.Reset()
		if code := RunCheckCommand(server, []string{"--config", pol, "--root", dir, "--root", home}, &out, &errb, state, nil); code != 2 ||
			!strings.Contains(errb.String(), "one folder") {
			t.Errorf("%s check with two folders: code %d, %s", server, code, errb.String())
		}
	}
}
