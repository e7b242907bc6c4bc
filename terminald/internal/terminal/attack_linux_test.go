package terminal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/runner/runnertest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

func TestQuotedSemicolonRunsAndPrintsLiteral(t *testing.T) {
	e := newEnv(t)
	r := e.run(t, `echo "a;b"`)
	if r.Code != "OK" || !r.OK || r.str("stdout") != "a;b\n" || r.exit() != 0 {
		t.Fatalf("got %s stdout %q: %s", r.Code, r.str("stdout"), r.text)
	}
	if !strings.Contains(r.str("confinement"), "landlock-abi") {
		t.Fatalf("confinement %q does not say Landlock", r.str("confinement"))
	}
	// Unquoted, the same characters are shell syntax and are refused.
	for _, line := range []string{"echo a;b", "echo a | cat", "echo a && touch x", "echo $(id)", "echo a > f", "ls *"} {
		wantNothingRan(t, e.run(t, line), "POLICY_DENIED")
	}
	if testfs.Exists(filepath.Join(e.Jail, "x")) || testfs.Exists(filepath.Join(e.Jail, "f")) {
		t.Fatal("a refused line created a file")
	}
}

func TestNonZeroExitIsStillOK(t *testing.T) {
	e := newEnv(t)
	r := e.run(t, "cat missing-file")
	if r.Code != "OK" || !r.OK || r.exit() == 0 || !strings.Contains(r.str("stderr"), "missing-file") {
		t.Fatalf("got %s exit %d: %s", r.Code, r.exit(), r.text)
	}
}

func TestRmRfRootIsDenied(t *testing.T) {
	e := newEnv(t)
	testfs.Write(t, filepath.Join(e.Jail, "keep.txt"), "keep")
	for _, line := range []string{"rm -rf /", "rm -rf .", "rm -rf --no-preserve-root /", "/bin/rm -rf /", "./rm -rf /", "sudo rm -rf /", "env rm -rf /", "xargs rm -rf"} {
		wantNothingRan(t, e.run(t, line), "POLICY_DENIED")
	}
	if !testfs.Exists(filepath.Join(e.Jail, "keep.txt")) {
		t.Fatal("keep.txt is gone")
	}
}

func TestGitAliasBangIsDeniedThroughServer(t *testing.T) {
	e := newEnv(t)
	gitInitOnHost(t, e.Jail)
	for _, line := range []string{
		"git -c alias.x=!touch${IFS}pwned x", "git -c alias.x='!touch pwned' x", "git -calias.x=!sh x",
		"git --config-env=alias.x=Y x", "git x",
	} {
		r := e.run(t, line)
		if r.Code == "OK" || len(r.Detail) != 0 {
			t.Fatalf("%q: %s", line, r.text)
		}
	}
	// An alias planted in the repository's own configuration is an unknown
	// subcommand: refused before git starts.
	cfg := filepath.Join(e.Jail, ".git", "config")
	b, _ := os.ReadFile(cfg)
	testfs.Write(t, cfg, string(b)+"[alias]\n\tx = !touch pwned\n")
	wantNothingRan(t, e.run(t, "git x"), "POLICY_DENIED")
	if testfs.Exists(filepath.Join(e.Jail, "pwned")) {
		t.Fatal("an alias ran")
	}
}

// gitInitOnHost makes dir a repository as its person would, outside the
// sandbox: a .git created by a command is a protected path and is moved to
// the quarantine before the answer (docs/terminald.md, Protected paths).
func gitInitOnHost(t *testing.T, dir string) {
	t.Helper()
	c := exec.Command("git", "init", "-q")
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
}

// TestRepoFsmonitorHookDoesNotRun plants core.fsmonitor in a repository's
// .git/config: plain git runs it on `git status`; through terminald the
// hardening environment turns it off.
func TestRepoFsmonitorHookDoesNotRun(t *testing.T) {
	e := newEnv(t)
	gitInitOnHost(t, e.Jail)
	cfg := filepath.Join(e.Jail, ".git", "config")
	b, _ := os.ReadFile(cfg)
	testfs.Write(t, cfg, string(b)+"[core]\n\tfsmonitor = touch pwned-fsmonitor\n[credential]\n\thelper = !touch pwned-cred\n")
	testfs.Write(t, filepath.Join(e.Jail, "a.txt"), "a")
	r := e.run(t, "git status")
	if r.Code != "OK" || r.exit() != 0 {
		t.Fatalf("git status: %s", r.text)
	}
	if testfs.Exists(filepath.Join(e.Jail, "pwned-fsmonitor")) {
		t.Fatal("the repository's fsmonitor hook ran through terminald")
	}
	// Control: the same repository makes plain git run the hook, so the
	// check above is live.
	c := exec.Command("git", "status")
	c.Dir = e.Jail
	c.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, "GIT_CONFIG_NOSYSTEM=1")
	_ = c.Run()
	if !testfs.Exists(filepath.Join(e.Jail, "pwned-fsmonitor")) {
		t.Fatal("control: plain git did not run the planted fsmonitor hook; the test proves nothing")
	}
}

func TestGitHooksDoNotRun(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.PassEnv = []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}
	})
	gitInitOnHost(t, e.Jail)
	// A hook made executable by someone outside the sandbox, pointing at a
	// system program that would leave a trace.
	hook := filepath.Join(e.Jail, ".git", "hooks", "pre-commit")
	testfs.Write(t, hook, "#!/bin/sh\ntouch pwned-hook\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(e.Jail, "a.txt"), "a")
	e.run(t, "git add a.txt")
	if r := e.run(t, "git commit -q -m x"); r.exit() != 0 {
		t.Fatalf("git commit did not succeed, so no hook was due: %s", r.text)
	}
	if testfs.Exists(filepath.Join(e.Jail, "pwned-hook")) {
		t.Fatal("a repository hook ran")
	}
}

func TestAllowedProgramCannotWriteOutsideJail(t *testing.T) {
	e := newEnv(t)
	outside := runnertest.Canon(t, t.TempDir())
	testfs.Write(t, filepath.Join(e.Jail, "src.txt"), "data")
	for _, line := range []string{
		"touch " + filepath.Join(outside, "touched"),
		"mkdir " + filepath.Join(outside, "made"),
		"cp src.txt " + filepath.Join(outside, "copied"),
		"mv src.txt " + filepath.Join(outside, "moved"),
		"touch " + filepath.Join(os.TempDir(), "bastion-outside-"+filepath.Base(outside)), // the global temp dir
	} {
		r := e.run(t, line)
		if r.Code != "OK" || r.exit() == 0 {
			t.Fatalf("%q: want a run that fails, got %s exit %d: %s", line, r.Code, r.exit(), r.text)
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 || testfs.Exists(filepath.Join(os.TempDir(), "bastion-outside-"+filepath.Base(outside))) {
		t.Fatalf("files appeared outside the jail: %v", ents)
	}
	if !testfs.Exists(filepath.Join(e.Jail, "src.txt")) {
		t.Fatal("mv moved the file out of the jail")
	}
}

func TestCannotReadHomeOrOtherTmpDir(t *testing.T) {
	e := newEnv(t)
	other := runnertest.Canon(t, t.TempDir())
	secret := filepath.Join(other, "notes.txt")
	testfs.Write(t, secret, "canary-8d1f2c\n")
	for _, line := range []string{"cat " + secret, "ls " + other, "head " + secret, "grep -r canary " + other, "cp " + secret + " stolen.txt"} {
		r := e.run(t, line)
		if r.Code != "OK" || r.exit() == 0 || strings.Contains(r.text, "canary-8d1f2c") {
			t.Fatalf("%q: %s", line, r.text)
		}
	}
	if testfs.Exists(filepath.Join(e.Jail, "stolen.txt")) {
		t.Fatal("the file was copied into the jail")
	}
	// HOME is private: not the server's home.
	r := e.run(t, "pwd")
	_ = r
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		if r := e.run(t, "ls -a "+home); r.exit() == 0 {
			t.Fatalf("the server's home is listable: %s", r.text)
		}
	}
}

func TestExplainNeverRuns(t *testing.T) {
	e := newEnv(t)
	before := len(e.AuditRecords(t))
	for _, line := range []string{"touch explained.txt", "mkdir explained-dir", "cp a explained-copy", "git init explained-repo", "tar -cf explained.tar ."} {
		r := e.explain(t, line)
		if r.Code != "OK" || r.str("decision") != "allow" || !strings.HasPrefix(r.str("executable"), "/") {
			t.Fatalf("%q: %s", line, r.text)
		}
	}
	ents, _ := os.ReadDir(e.Jail)
	if len(ents) != 0 {
		t.Fatalf("explain_command changed the jail: %v", ents)
	}
	if n := len(e.AuditRecords(t)); n != before {
		t.Fatalf("explain_command wrote %d audit records", n-before)
	}
	if runs := runPairs(t, e); len(runs) != 0 {
		t.Fatalf("explain_command prepared a run: %v", runs)
	}
}

func TestNetworkIsDeniedToAllowedProgram(t *testing.T) {
	// git is allowlisted; the kernel refuses its TCP connect.
	e := newEnv(t, func(o *Options) { o.Timeout = 10 * time.Second })
	r := e.run(t, "git ls-remote http://127.0.0.1:9/x.git")
	if r.Code != "OK" || r.exit() == 0 {
		t.Fatalf("got %s exit %d: %s", r.Code, r.exit(), r.text)
	}
}

// runPairs lists the private HOME/TMPDIR pairs in the runs directories
// beneath the server's state directory.
func runPairs(t *testing.T, e *env) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(e.State, "terminald", "runs", "*", "*"))
	var names []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			names = append(names, filepath.Base(d))
		}
	}
	return names
}
