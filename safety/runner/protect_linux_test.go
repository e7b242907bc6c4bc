package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/runner/runnertest"
	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

const devPolicy = "../../policies/dev.example.toml"

// gitOutside runs real git in dir as the person would, outside any
// sandbox, with a clean global configuration.
func gitOutside(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.invalid", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.invalid"}
	out, err := c.CombinedOutput()
	return string(out), err
}

// newRepoFixture is a sandbox-profile runner (isolation iso) whose jail is
// a git repository with one commit.
func newRepoFixture(t *testing.T, iso sandbox.Isolation) *fixture {
	t.Helper()
	f := &fixture{Env: runnertest.New(t, devPolicy)}
	f.Runtime.Sandboxed = true
	f.Runtime.Isolation = iso
	f.Runtime.Path = []string{"/usr/local/bin", "/usr/bin", "/bin"}
	r, err := New(Options{TerminalRuntime: f.Runtime, Root: f.Root, Audit: f.Audit})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(r.Close)
	f.r = r
	if err := os.WriteFile(filepath.Join(f.Jail, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "p"}, {"config", "user.email", "p@example.invalid"},
		{"add", "README"}, {"commit", "-q", "-m", "first"}} {
		if out, err := gitOutside(t, f.Jail, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return f
}

func isolations() []sandbox.Isolation {
	return []sandbox.Isolation{sandbox.IsolationNamespaces, sandbox.IsolationLandlock}
}

// TestPlantedProtectedPathsNeverRunOutside plants every kind of protected
// file from inside the sandbox (hooks, core.fsmonitor, editor tasks,
// .envrc, agent settings, .npmrc, a symbolic link, a new nested
// repository, a renamed .git, a renamed parent), then runs real git status
// and git commit outside the sandbox in that folder: nothing planted runs,
// nothing planted is in the jail when the answer arrives, and nothing but
// what the command wrote outside protected paths was added.
func TestPlantedProtectedPathsNeverRunOutside(t *testing.T) {
	script, err := filepath.Abs("testdata/plant.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, iso := range isolations() {
		t.Run(string(iso), func(t *testing.T) {
			f := newRepoFixture(t, iso)
			data, _ := os.ReadFile(script)
			if err := os.WriteFile(filepath.Join(f.Jail, "plant.py"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(t.TempDir(), "ran")
			configBefore, _ := os.ReadFile(filepath.Join(f.Jail, ".git/config"))
			var gitBefore, gitAfter os.FileInfo
			gitBefore, _ = os.Stat(filepath.Join(f.Jail, ".git"))

			out := f.run("python3 plant.py " + marker)
			if !out.Ran || !strings.Contains(string(out.Stdout), "done") {
				t.Fatalf("the script did not run to its end: %s %s\n%s\n%s", out.Code, out.Reason, out.Stdout, out.Stderr)
			}
			t.Logf("%s\nprotected: %+v", out.Stdout, out.Protected)

			for _, p := range []string{".vscode", ".envrc", ".mcp.json", ".claude", ".npmrc", "sub/.envrc", ".bashrc",
				"nested/.git", "renamed/.vscode", ".git/hooks/pre-commit", ".git/hooks/pre-push", ".git/hooks/post-checkout", ".git/info/attributes"} {
				if _, err := os.Lstat(filepath.Join(f.Jail, p)); err == nil {
					t.Errorf("%s is in the jail after the answer", p)
				}
			}
			if configAfter, err := os.ReadFile(filepath.Join(f.Jail, ".git/config")); err == nil && string(configAfter) != string(configBefore) {
				t.Errorf(".git/config changed:\n%s", configAfter)
			}
			gitAfter, err = os.Stat(filepath.Join(f.Jail, ".git"))
			if err != nil || !os.SameFile(gitBefore, gitAfter) {
				// Landlock isolation cannot refuse the rename: the original
				// stays where the command put it and the planted .git is
				// quarantined. The repository must still not run anything.
				if iso == sandbox.IsolationNamespaces {
					t.Errorf(".git is not the repository's own any more")
				}
			}
			if len(out.Protected) == 0 {
				t.Errorf("no protected path reported (detail.protected)")
			}
			if !strings.Contains(out.Reason, "protected") {
				t.Errorf("the reason does not mention the protected paths: %s", out.Reason)
			}
			q, _ := os.ReadDir(filepath.Join(f.Runtime.StateDir, QuarantineDirName))
			if len(q) == 0 {
				t.Errorf("nothing was quarantined")
			}
			// The person's own git, outside any sandbox.
			if _, err := os.Stat(filepath.Join(f.Jail, ".git")); err == nil {
				gitOutside(t, f.Jail, "status")
				_ = os.WriteFile(filepath.Join(f.Jail, "README"), []byte("changed\n"), 0o644)
				gitOutside(t, f.Jail, "commit", "-q", "-am", "second")
				gitOutside(t, f.Jail, "checkout", "-q", "-b", "other")
			}
			if _, err := os.Stat(filepath.Join(f.Jail, "nested")); err == nil {
				gitOutside(t, filepath.Join(f.Jail, "nested"), "status")
			}
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("a planted program ran outside the sandbox: %q", b)
			}
			// The person, and only the person, takes a planted file back.
			qdir := filepath.Join(f.Runtime.StateDir, QuarantineDirName)
			var list, errb strings.Builder
			if code := protect.RunQuarantineCommand([]string{"list", qdir}, &list, &errb); code != 0 {
				t.Fatalf("quarantine list: %d %s", code, errb.String())
			}
			for _, c := range out.Protected {
				if c.Path != ".envrc" {
					continue
				}
				if !strings.Contains(list.String(), c.Quarantine+"\t") {
					t.Fatalf("quarantine list does not show %s:\n%s", c.Quarantine, list.String())
				}
				var o, e strings.Builder
				if code := protect.RunQuarantineCommand([]string{"restore", qdir, c.Quarantine}, &o, &e); code != 0 {
					t.Fatalf("quarantine restore: %s", e.String())
				}
				if b, err := os.ReadFile(filepath.Join(f.Jail, ".envrc")); err != nil || !strings.Contains(string(b), "fsmon.sh") {
					t.Fatalf(".envrc was not restored: %v", err)
				}
				if code := protect.RunQuarantineCommand([]string{"restore", qdir, c.Quarantine}, &o, &e); code == 0 {
					t.Fatal("a second restore succeeded")
				}
				_ = os.Remove(filepath.Join(f.Jail, ".envrc"))
			}
			recs := f.AuditRecords(t)
			found := false
			for _, r := range recs {
				if _, ok := r["protected"]; ok {
					found = true
				}
				if fields, ok := r["fields"].(map[string]any); ok {
					if _, ok := fields["protected"]; ok {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("the audit outcome does not list the protected paths")
			}
		})
	}
}

// TestGitWorksInsideTheSandboxWithProtectedPaths: everyday git commands
// still work inside the sandbox; git config, which must write a protected
// file, fails, and the answer names the key that allows it.
func TestGitWorksInsideTheSandboxWithProtectedPaths(t *testing.T) {
	f := newRepoFixture(t, sandbox.IsolationNamespaces)
	if err := os.WriteFile(filepath.Join(f.Jail, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"git status", "git add a.txt", "git commit -q -m second", "git branch feature",
		"git checkout -q feature", "git switch -q main", "git log --oneline", "git diff HEAD~1", "git stash list"} {
		out := f.run(line)
		if !out.Ran || out.ExitCode != 0 {
			t.Fatalf("%s: %s %s exit %d\n%s%s", line, out.Code, out.Reason, out.ExitCode, out.Stdout, out.Stderr)
		}
		if len(out.Protected) != 0 {
			t.Fatalf("%s touched protected paths: %+v", line, out.Protected)
		}
	}
	if err := os.WriteFile(filepath.Join(f.Jail, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := f.run("git stash"); !out.Ran || out.ExitCode != 0 {
		t.Fatalf("git stash: %s %s\n%s%s", out.Code, out.Reason, out.Stdout, out.Stderr)
	}
	// A direct "git config" is refused by the command policy itself; a
	// script that runs it meets the read-only mount.
	out := f.run(`sh -c "git config core.fsmonitor /bin/true"`)
	if !out.Ran || out.ExitCode == 0 {
		t.Fatalf("git config was not refused: %s %s exit %d", out.Code, out.Reason, out.ExitCode)
	}
	if !strings.Contains(out.Reason, "unprotect") || !strings.Contains(out.Reason, ".git/config") {
		t.Fatalf("the refusal does not name the key that allows it: %s", out.Reason)
	}
	if b, _ := os.ReadFile(filepath.Join(f.Jail, ".git/config")); strings.Contains(string(b), "fsmonitor") {
		t.Fatal("git config changed .git/config")
	}
	// git init where no repository exists creates a protected .git: it is
	// undone before the answer, which says why.
	if err := os.Mkdir(filepath.Join(f.Jail, "fresh"), 0o755); err != nil {
		t.Fatal(err)
	}
	out = f.runIn("git init -q", "fresh")
	if len(out.Protected) == 0 || !strings.Contains(out.Reason, "unprotect") {
		t.Fatalf("git init was not undone with a reason: %s %+v", out.Reason, out.Protected)
	}
	if _, err := os.Lstat(filepath.Join(f.Jail, "fresh/.git")); err == nil {
		t.Fatal("the new repository is in the jail after the answer")
	}
}

// TestProtectedPathsUnprivileged runs the protected-path tests again with
// the server as an unprivileged user (uid 65534), as people run it.
func TestProtectedPathsUnprivileged(t *testing.T) {
	testfs.RerunUnprivileged(t, "^(TestPlantedProtectedPathsNeverRunOutside|TestGitWorksInsideTheSandboxWithProtectedPaths|TestConcurrentRunsNeverRestoreWhatAnotherPlanted)$",
		devPolicy, examplePolicy, "testdata/plant.py")
}

// TestConcurrentRunsNeverRestoreWhatAnotherPlanted: one command plants
// (.envrc created; with landlock isolation .git/config changed too) and
// keeps running; a second command starts in the same jail after the
// plant and ends after the first. Each is held to the state before the
// first began, so the second never takes the plant for an original: when
// both have answered, nothing planted is in the jail and .git/config is
// the repository's own.
func TestConcurrentRunsNeverRestoreWhatAnotherPlanted(t *testing.T) {
	for _, iso := range isolations() {
		t.Run(string(iso), func(t *testing.T) {
			f := newRepoFixture(t, iso)
			plant := "import os, time\n" +
				"open('.envrc', 'w').write('echo planted\\n')\n" +
				"try:\n    open('.git/config', 'a').write('[core]\\n\\tfsmonitor = /bin/true\\n')\nexcept OSError:\n    pass\n" +
				"open('planted.marker', 'w').write('x')\n" +
				"time.sleep(2)\n"
			wait := "import time\ntime.sleep(3)\n"
			for name, text := range map[string]string{"plant.py": plant, "wait.py": wait} {
				if err := os.WriteFile(filepath.Join(f.Jail, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			configBefore, _ := os.ReadFile(filepath.Join(f.Jail, ".git/config"))
			first := make(chan Outcome, 1)
			go func() { first <- f.run("python3 plant.py") }()
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(f.Jail, "planted.marker")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the first command did not plant in 30 s: %+v", <-first)
				}
				time.Sleep(10 * time.Millisecond)
			}
			second := f.run("python3 wait.py")
			a := <-first
			if !a.Ran || !second.Ran {
				t.Fatalf("runs: %s %s / %s %s", a.Code, a.Reason, second.Code, second.Reason)
			}
			if _, err := os.Lstat(filepath.Join(f.Jail, ".envrc")); err == nil {
				t.Errorf(".envrc is in the jail after both answers (first %+v, second %+v)", a.Protected, second.Protected)
			}
			if b, _ := os.ReadFile(filepath.Join(f.Jail, ".git/config")); string(b) != string(configBefore) {
				t.Errorf(".git/config is not the repository's own:\n%s\n(first %+v, second %+v)", b, a.Protected, second.Protected)
			}
		})
	}
}
