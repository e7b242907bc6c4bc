package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostGitConfig makes a HOME whose global git configuration holds the
// person's identity next to everything git_identity must never pass on:
// a credential helper, a hook path, an alias that runs a program, an
// include and a URL with a token.
func hostGitConfig(t *testing.T, identity string) {
	t.Helper()
	home := t.TempDir()
	inc := filepath.Join(home, "included.gitconfig")
	if err := os.WriteFile(inc, []byte("[core]\n\tsshCommand = ssh -i secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := identity + "[credential]\n\thelper = store\n[core]\n\thooksPath = /tmp/hooks\n[alias]\n\tx = !sh\n" +
		"[include]\n\tpath = " + inc + "\n[url \"https://tok3n@example.com/\"]\n\tinsteadOf = https://example.com/\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
}

// TestGitIdentityPassesNameAndEmailOnly: with git_identity = true the
// runtime's identity file holds the person's user.name and user.email
// (quotes and backslashes escaped) and nothing else of their global
// configuration, commands get GIT_CONFIG_GLOBAL pointing at it, and the
// file is a read path (read-only in the view).
func TestGitIdentityPassesNameAndEmailOnly(t *testing.T) {
	hostGitConfig(t, "[user]\n\tname = Ada \\\"Q\\\" Lovelace\n\temail = ada@example.invalid\n")
	term, jail := runtimeTerminal(t)
	term.Sandbox.GitIdentity = true
	rt, err := term.Runtime(jail, state(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(rt.StateDir, GitIdentityFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"[user]", `name = "Ada \"Q\" Lovelace"`, `email = "ada@example.invalid"`} {
		if !strings.Contains(got, want) {
			t.Fatalf("identity file lacks %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"credential", "helper", "hooksPath", "alias", "!sh", "include", "sshCommand", "tok3n", "insteadOf"} {
		if strings.Contains(got, never) {
			t.Fatalf("identity file passes on %q:\n%s", never, got)
		}
	}
	if !slices.Contains(rt.PassEnv, "GIT_CONFIG_GLOBAL="+file) {
		t.Fatalf("PassEnv %v lacks GIT_CONFIG_GLOBAL", rt.PassEnv)
	}
	if !slices.Contains(rt.ReadPaths, file) || !slices.Contains(rt.ReadPaths, "/usr") {
		t.Fatalf("read paths %v: want the default set plus the identity file", rt.ReadPaths)
	}
}

// TestGitIdentityOffPassesNothing: without git_identity no file is
// written and no variable is set, whatever the host's configuration.
func TestGitIdentityOffPassesNothing(t *testing.T) {
	hostGitConfig(t, "[user]\n\tname = Ada\n\temail = ada@example.invalid\n")
	term, jail := runtimeTerminal(t)
	rt, err := term.Runtime(jail, state(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rt.StateDir, GitIdentityFile)); err == nil {
		t.Fatal("an identity file was written with git_identity off")
	}
	if len(rt.PassEnv) != 0 || len(rt.ReadPaths) != 0 {
		t.Fatalf("PassEnv %v, ReadPaths %v", rt.PassEnv, rt.ReadPaths)
	}
}

// TestGitIdentityUnsetIsReported: a host without an identity starts, with
// each missing key named, and commands get no GIT_CONFIG_GLOBAL.
func TestGitIdentityUnsetIsReported(t *testing.T) {
	hostGitConfig(t, "")
	term, jail := runtimeTerminal(t)
	term.Sandbox.GitIdentity = true
	rt, err := term.Runtime(jail, state(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.GitIdentity) != 0 || len(rt.GitIdentitySkipped) != 2 || len(rt.PassEnv) != 0 {
		t.Fatalf("identity %v, skipped %v, PassEnv %v", rt.GitIdentity, rt.GitIdentitySkipped, rt.PassEnv)
	}
}
