package terminal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/sandbox"
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
	if exists(filepath.Join(e.jail, "x")) || exists(filepath.Join(e.jail, "f")) {
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
	write(t, filepath.Join(e.jail, "keep.txt"), "keep")
	for _, line := range []string{"rm -rf /", "rm -rf .", "rm -rf --no-preserve-root /", "/bin/rm -rf /", "./rm -rf /", "sudo rm -rf /", "env rm -rf /", "xargs rm -rf"} {
		wantNothingRan(t, e.run(t, line), "POLICY_DENIED")
	}
	if !exists(filepath.Join(e.jail, "keep.txt")) {
		t.Fatal("keep.txt is gone")
	}
}

func TestGitAliasBangIsDeniedThroughServer(t *testing.T) {
	e := newEnv(t)
	if r := e.run(t, "git init -q"); r.Code != "OK" || r.exit() != 0 {
		t.Fatalf("git init: %s", r.text)
	}
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
	cfg := filepath.Join(e.jail, ".git", "config")
	b, _ := os.ReadFile(cfg)
	write(t, cfg, string(b)+"[alias]\n\tx = !touch pwned\n")
	wantNothingRan(t, e.run(t, "git x"), "POLICY_DENIED")
	if exists(filepath.Join(e.jail, "pwned")) {
		t.Fatal("an alias ran")
	}
}

// TestRepoFsmonitorHookDoesNotRun plants core.fsmonitor in a repository's
// .git/config: plain git runs it on `git status`; through terminald the
// hardening environment turns it off.
func TestRepoFsmonitorHookDoesNotRun(t *testing.T) {
	e := newEnv(t)
	if r := e.run(t, "git init -q"); r.exit() != 0 {
		t.Fatalf("git init: %s", r.text)
	}
	cfg := filepath.Join(e.jail, ".git", "config")
	b, _ := os.ReadFile(cfg)
	write(t, cfg, string(b)+"[core]\n\tfsmonitor = touch pwned-fsmonitor\n[credential]\n\thelper = !touch pwned-cred\n")
	write(t, filepath.Join(e.jail, "a.txt"), "a")
	r := e.run(t, "git status")
	if r.Code != "OK" || r.exit() != 0 {
		t.Fatalf("git status: %s", r.text)
	}
	if exists(filepath.Join(e.jail, "pwned-fsmonitor")) {
		t.Fatal("the repository's fsmonitor hook ran through terminald")
	}
	// Control: the same repository makes plain git run the hook, so the
	// check above is live.
	c := exec.Command("git", "status")
	c.Dir = e.jail
	c.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, "GIT_CONFIG_NOSYSTEM=1")
	_ = c.Run()
	if !exists(filepath.Join(e.jail, "pwned-fsmonitor")) {
		t.Fatal("control: plain git did not run the planted fsmonitor hook; the test proves nothing")
	}
}

func TestGitHooksDoNotRun(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.PassEnv = []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}
	})
	if r := e.run(t, "git init -q"); r.exit() != 0 {
		t.Fatalf("git init: %s", r.text)
	}
	// A hook made executable by someone outside the sandbox, pointing at a
	// system program that would leave a trace.
	hook := filepath.Join(e.jail, ".git", "hooks", "pre-commit")
	write(t, hook, "#!/bin/sh\ntouch pwned-hook\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.jail, "a.txt"), "a")
	e.run(t, "git add a.txt")
	if r := e.run(t, "git commit -q -m x"); r.exit() != 0 {
		t.Fatalf("git commit did not succeed, so no hook was due: %s", r.text)
	}
	if exists(filepath.Join(e.jail, "pwned-hook")) {
		t.Fatal("a repository hook ran")
	}
}

func TestCwdDotDotEscapeIsRefused(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Dir(e.jail)
	for _, cwd := range []string{"..", "../..", "sub/../..", "/", outside, "/etc", e.jail + "/../x"} {
		r := e.runIn(t, "touch escaped.txt", cwd)
		wantNothingRan(t, r, "PATH_ESCAPE")
	}
	if exists(filepath.Join(outside, "escaped.txt")) {
		t.Fatal("a file was created outside the jail")
	}
	// Inside, relative and absolute spellings work.
	if err := os.Mkdir(filepath.Join(e.jail, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{"sub", "./sub/", filepath.Join(e.jail, "sub")} {
		if r := e.runIn(t, "pwd", cwd); r.Code != "OK" || r.str("stdout") != filepath.Join(e.jail, "sub")+"\n" {
			t.Fatalf("cwd %q: %s", cwd, r.text)
		}
	}
	wantNothingRan(t, e.runIn(t, "pwd", "missing"), "NOT_FOUND")
}

func TestCwdSymlinkIsRefused(t *testing.T) {
	e := newEnv(t)
	outside := canon(t, t.TempDir())
	if err := os.Symlink(outside, filepath.Join(e.jail, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.jail, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(e.jail, "inner")); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{"link", "link/", "inner", "inner/.", filepath.Join(e.jail, "link")} {
		wantNothingRan(t, e.runIn(t, "touch through-link.txt", cwd), "PATH_ESCAPE")
	}
	if exists(filepath.Join(outside, "through-link.txt")) {
		t.Fatal("a file was created through the symlink")
	}
}

func TestAllowedProgramCannotWriteOutsideJail(t *testing.T) {
	e := newEnv(t)
	outside := canon(t, t.TempDir())
	write(t, filepath.Join(e.jail, "src.txt"), "data")
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
	if len(ents) != 0 || exists(filepath.Join(os.TempDir(), "bastion-outside-"+filepath.Base(outside))) {
		t.Fatalf("files appeared outside the jail: %v", ents)
	}
	if !exists(filepath.Join(e.jail, "src.txt")) {
		t.Fatal("mv moved the file out of the jail")
	}
}

func TestCannotReadHomeOrOtherTmpDir(t *testing.T) {
	e := newEnv(t)
	other := canon(t, t.TempDir())
	secret := filepath.Join(other, "notes.txt")
	write(t, secret, "canary-8d1f2c\n")
	for _, line := range []string{"cat " + secret, "ls " + other, "head " + secret, "grep -r canary " + other, "cp " + secret + " stolen.txt"} {
		r := e.run(t, line)
		if r.Code != "OK" || r.exit() == 0 || strings.Contains(r.text, "canary-8d1f2c") {
			t.Fatalf("%q: %s", line, r.text)
		}
	}
	if exists(filepath.Join(e.jail, "stolen.txt")) {
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

func TestSecretInOutputIsRedactedBeforeTruncation(t *testing.T) {
	const limit = 32 << 10 // also the sandbox's read-chunk size
	e := newEnv(t, func(o *Options) { o.MaxOutputBytes = limit })
	key := "AKIAQWERTYUIZXCV2345"
	// The key starts 8 bytes before the cap and the chunk boundary.
	content := strings.Repeat("x", limit-9) + " " + key + " tail\n" + strings.Repeat("y", 1000)
	write(t, filepath.Join(e.jail, "creds.log"), content)
	r := e.run(t, "cat creds.log")
	if r.Code != "OUTPUT_TRUNCATED" || !r.OK || r.Detail["truncated"] != true {
		t.Fatalf("got %s: %.300s", r.Code, r.text)
	}
	out := r.str("stdout")
	if len(out) != limit {
		t.Fatalf("stdout is %d bytes, want the cap %d", len(out), limit)
	}
	for _, part := range []string{"AKIAQW", "AKIA", "QWERTY", "ZXCV2345"} {
		if strings.Contains(r.text, part) {
			t.Fatalf("the secret leaked (%q) in the result", part)
		}
	}
	if !strings.HasSuffix(out, " [REDACTE") { // 8 bytes of the marker fit
		t.Fatalf("the output does not end in the cut marker: %q", out[len(out)-20:])
	}
	// And the audit log never holds it either.
	b, _ := os.ReadFile(e.auditPath)
	if strings.Contains(string(b), "AKIA") {
		t.Fatal("the audit log holds the key")
	}
	// A secret in the argv is redacted in the audit record.
	e.run(t, "echo "+key)
	b, _ = os.ReadFile(e.auditPath)
	if strings.Contains(string(b), key) {
		t.Fatal("the audit log holds the key from the argv")
	}
}

// spawnerEnv allowlists the spawner helper (the test binary under another
// name) on a private PATH; its directory is readable and executable.
func spawnerEnv(t *testing.T, timeout time.Duration) *env {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self = canon(t, self)
	bin := canon(t, t.TempDir())
	if err := os.Symlink(self, filepath.Join(bin, spawnerName)); err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(o *Options) {
		o.Policy.Allow = append(o.Policy.Allow, spawnerName, "sleep")
		o.Path = []string{bin, "/usr/bin", "/bin"}
		o.ReadPaths = append(append([]string{}, sandbox.DefaultReadPaths...), bin, filepath.Dir(self))
		o.Timeout = timeout
	})
}

func TestTimeoutKillsGrandchildren(t *testing.T) {
	e := spawnerEnv(t, time.Second)
	start := time.Now()
	r := e.run(t, spawnerName)
	if r.Code != "TIMEOUT" || r.OK {
		t.Fatalf("got %s: %s", r.Code, r.text)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the call took %s", el)
	}
	if r.Detail == nil || r.str("confinement") == "" {
		t.Fatalf("a run that started has no detail: %s", r.text)
	}
	b, err := os.ReadFile(filepath.Join(e.jail, "spawn.pid"))
	if err != nil {
		t.Fatalf("the spawner did not start its grandchild: %v", err)
	}
	tok := string(b)
	deadline := time.Now().Add(3 * time.Second)
	for {
		pids := mcpkittest.Carrying(tok)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				unix.Kill(pid, unix.SIGKILL)
			}
			t.Fatalf("grandchild %v survived the timeout", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The audit outcome says TIMEOUT.
	recs := e.auditRecords(t)
	last := recs[len(recs)-1]
	if last["kind"] != "outcome" || last["code"] != "TIMEOUT" {
		t.Fatalf("last audit record: %v", last)
	}
}

func TestAuditFailClosedRunsNothing(t *testing.T) {
	e := newEnv(t)
	if r := e.run(t, "touch before.txt"); r.Code != "OK" || !exists(filepath.Join(e.jail, "before.txt")) {
		t.Fatalf("before: %s", r.text)
	}
	if err := unix.Mount(e.auditDir, e.auditDir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v (tests run as root)", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(e.auditDir, 0); err != nil {
			unix.Unmount(e.auditDir, unix.MNT_DETACH)
		}
	})
	if err := unix.Mount("", e.auditDir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	wantNothingRan(t, e.run(t, "touch after.txt"), "AUDIT_UNAVAILABLE")
	if exists(filepath.Join(e.jail, "after.txt")) {
		t.Fatal("the command ran without an intent record")
	}
	// explain_command records nothing and still answers.
	if r := e.explain(t, "touch after.txt"); r.Code != "OK" || r.str("decision") != "allow" {
		t.Fatalf("explain: %s", r.text)
	}
}

func TestExplainNeverRuns(t *testing.T) {
	e := newEnv(t)
	before := len(e.auditRecords(t))
	for _, line := range []string{"touch explained.txt", "mkdir explained-dir", "cp a explained-copy", "git init explained-repo", "tar -cf explained.tar ."} {
		r := e.explain(t, line)
		if r.Code != "OK" || r.str("decision") != "allow" || !strings.HasPrefix(r.str("executable"), "/") {
			t.Fatalf("%q: %s", line, r.text)
		}
	}
	ents, _ := os.ReadDir(e.jail)
	if len(ents) != 0 {
		t.Fatalf("explain_command changed the jail: %v", ents)
	}
	if n := len(e.auditRecords(t)); n != before {
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

func TestRunCannotLeaveFilesInHomeForTheNextRun(t *testing.T) {
	e := newEnv(t)
	// A used pair returns to the pool shortly after the answer.
	pooled := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); len(e.srv.spare) == 0; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the private directories never returned to the pool")
			}
		}
	}
	e.run(t, "pwd")
	pooled()
	runs := runPairs(t, e)
	if len(runs) != 1 {
		t.Fatalf("want one pooled private directory, got %v", runs)
	}
	home := filepath.Join(e.srv.runsDir, runs[0], "home")
	if r := e.run(t, "touch "+filepath.Join(home, ".planted")); r.exit() != 0 {
		t.Fatalf("a run cannot write its own HOME: %s", r.text)
	}
	pooled()
	if r := e.run(t, "ls -a "+home); r.exit() != 0 || strings.Contains(r.str("stdout"), ".planted") {
		t.Fatalf("the next run sees what the last one left in HOME: %s", r.text)
	}
	e.srv.Close()
	if left, _ := os.ReadDir(filepath.Join(e.state, "terminald", "runs")); len(left) != 0 {
		t.Fatalf("Close left private directories behind: %v", left)
	}
}

// runPairs lists the private HOME/TMPDIR pairs in the server's own runs
// directory (its lock file aside).
func runPairs(t *testing.T, e *env) []string {
	t.Helper()
	ents, _ := os.ReadDir(e.srv.runsDir)
	var names []string
	for _, d := range ents {
		if d.IsDir() {
			names = append(names, d.Name())
		}
	}
	return names
}
