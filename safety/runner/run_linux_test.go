package runner

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/runner/runnertest"
	"github.com/bastion-mcp/bastion/safety/sandbox"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

func TestCwdDotDotEscapeIsRefused(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Dir(f.Jail)
	for _, c := range []struct{ name, cwd string }{
		{"dotdot", ".."}, {"dotdot-twice", "../.."}, {"dotdot-through-sub", "sub/../.."}, {"filesystem-root", "/"},
		{"jail-parent", outside}, {"etc", "/etc"}, {"absolute-dotdot", f.Jail + "/../x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantNothingRan(t, f.runIn("touch escaped.txt", c.cwd), "PATH_ESCAPE")
		})
	}
	if testfs.Exists(filepath.Join(outside, "escaped.txt")) {
		t.Fatal("a file was created outside the jail")
	}
	// Inside, relative and absolute spellings work.
	if err := os.Mkdir(filepath.Join(f.Jail, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{"sub", "./sub/", filepath.Join(f.Jail, "sub")} {
		if out := f.runIn("pwd", cwd); out.Code != "OK" || string(out.Stdout) != filepath.Join(f.Jail, "sub")+"\n" {
			t.Fatalf("cwd %q: %+v", cwd, out)
		}
	}
	wantNothingRan(t, f.runIn("pwd", "missing"), "NOT_FOUND")
}

func TestCwdSymlinkIsRefused(t *testing.T) {
	f := newFixture(t)
	outside := runnertest.Canon(t, t.TempDir())
	if err := os.Symlink(outside, filepath.Join(f.Jail, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.Jail, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(f.Jail, "inner")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, cwd string }{
		{"link-outside", "link"}, {"link-outside-slash", "link/"}, {"link-inside", "inner"},
		{"link-inside-dot", "inner/."}, {"link-absolute", filepath.Join(f.Jail, "link")},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantNothingRan(t, f.runIn("touch through-link.txt", c.cwd), "PATH_ESCAPE")
		})
	}
	if testfs.Exists(filepath.Join(outside, "through-link.txt")) {
		t.Fatal("a file was created through the symlink")
	}
}

// TestRefusalIsAnAuditEventInPipelineOrder checks that each refusal is
// recorded as an event with the redacted line and no intent, and that the
// policy is judged before the working directory, and the working directory
// before the executable is looked up.
func TestRefusalIsAnAuditEventInPipelineOrder(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Policy.Allow = append(o.Policy.Allow, "no-such-program") })
	for _, c := range []struct{ name, line, cwd, code string }{
		{"policy before cwd", "rm -rf / AKIAQWERTYUIZXCV2345", "..", "POLICY_DENIED"},
		{"cwd before executable", "no-such-program", "..", "PATH_ESCAPE"},
		{"executable", "no-such-program", "", "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(f.AuditRecords(t))
			wantNothingRan(t, f.runIn(c.line, c.cwd), c.code)
			recs := f.AuditRecords(t)
			if len(recs) != before+1 {
				t.Fatalf("want one audit record for the refusal, got %d", len(recs)-before)
			}
			last := recs[len(recs)-1]
			b, _ := os.ReadFile(f.AuditPath)
			if last["kind"] == "intent" || !strings.Contains(string(b), "run_command.refused") || strings.Contains(string(b), "AKIA") {
				t.Fatalf("refusal record: %v", last)
			}
		})
	}
}

func TestSecretInOutputIsRedactedBeforeTruncation(t *testing.T) {
	const limit = 32 << 10 // also the sandbox's read-chunk size
	f := newFixture(t, func(o *Options) { o.MaxOutputBytes = limit })
	key := "AKIAQWERTYUIZXCV2345"
	// The key starts 8 bytes before the cap and the chunk boundary.
	content := strings.Repeat("x", limit-9) + " " + key + " tail\n" + strings.Repeat("y", 1000)
	testfs.Write(t, filepath.Join(f.Jail, "creds.log"), content)
	out := f.run("cat creds.log")
	if out.Code != "OUTPUT_TRUNCATED" || !out.Ran || !out.Truncated {
		t.Fatalf("got %s: %.300s", out.Code, out.Reason)
	}
	if len(out.Stdout) != limit {
		t.Fatalf("stdout is %d bytes, want the cap %d", len(out.Stdout), limit)
	}
	for _, part := range []string{"AKIAQW", "AKIA", "QWERTY", "ZXCV2345"} {
		if strings.Contains(string(out.Stdout), part) || strings.Contains(out.Reason, part) {
			t.Fatalf("the secret leaked (%q) in the outcome", part)
		}
	}
	if !strings.HasSuffix(string(out.Stdout), " [REDACTE") { // 8 bytes of the marker fit
		t.Fatalf("the output does not end in the cut marker: %q", out.Stdout[len(out.Stdout)-20:])
	}
	// And the audit log never holds it either.
	b, _ := os.ReadFile(f.AuditPath)
	if strings.Contains(string(b), "AKIA") {
		t.Fatal("the audit log holds the key")
	}
	// A secret in the argv is redacted in the audit record.
	f.run("echo " + key)
	b, _ = os.ReadFile(f.AuditPath)
	if strings.Contains(string(b), key) {
		t.Fatal("the audit log holds the key from the argv")
	}
}

// spawnerFixture allowlists the spawner (the test binary under another
// name) on a private PATH; its directory is readable and executable.
func spawnerFixture(t *testing.T, timeout time.Duration) *fixture {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self = runnertest.Canon(t, self)
	bin := runnertest.Canon(t, t.TempDir())
	if err := os.Symlink(self, filepath.Join(bin, spawnerName)); err != nil {
		t.Fatal(err)
	}
	return newFixture(t, func(o *Options) {
		o.Policy.Allow = append(o.Policy.Allow, spawnerName, "sleep")
		o.Path = []string{bin, "/usr/bin", "/bin"}
		o.ReadPaths = append(append([]string{}, sandbox.DefaultReadPaths...), bin, filepath.Dir(self))
		o.Timeout = timeout
	})
}

func TestTimeoutKillsGrandchildren(t *testing.T) {
	f := spawnerFixture(t, time.Second)
	start := time.Now()
	out := f.run(spawnerName)
	if out.Code != "TIMEOUT" || !out.Ran || out.Confinement == "" {
		t.Fatalf("got %s ran=%v: %s", out.Code, out.Ran, out.Reason)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the run took %s", el)
	}
	b, err := os.ReadFile(filepath.Join(f.Jail, "spawn.pid"))
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
	recs := f.AuditRecords(t)
	last := recs[len(recs)-1]
	if last["kind"] != "outcome" || last["code"] != "TIMEOUT" {
		t.Fatalf("last audit record: %v", last)
	}
}

func TestAuditFailClosedRunsNothing(t *testing.T) {
	f := newFixture(t)
	if out := f.run("touch before.txt"); out.Code != "OK" || !testfs.Exists(filepath.Join(f.Jail, "before.txt")) {
		t.Fatalf("before: %+v", out)
	}
	if err := unix.Mount(f.AuditDir, f.AuditDir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v (tests run as root)", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(f.AuditDir, 0); err != nil {
			unix.Unmount(f.AuditDir, unix.MNT_DETACH)
		}
	})
	if err := unix.Mount("", f.AuditDir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	wantNothingRan(t, f.run("touch after.txt"), "AUDIT_UNAVAILABLE")
	if testfs.Exists(filepath.Join(f.Jail, "after.txt")) {
		t.Fatal("the command ran without an intent record")
	}
	// The evaluation records nothing and still answers.
	if ev := f.r.Evaluate("touch after.txt"); !ev.Allowed() {
		t.Fatalf("evaluate: %+v", ev)
	}
}

func TestRunCannotLeaveFilesInHomeForTheNextRun(t *testing.T) {
	f := newFixture(t)
	// A used pair returns to the pool shortly after the answer.
	pooled := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); len(f.r.spare)+len(f.r.primed) == 0; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the private directories never returned to the pool")
			}
		}
	}
	f.run("pwd")
	pooled()
	// A run sees only its own HOME, so a command naming a pooled pair's
	// HOME works only in the run that got that pair; the pairs are taken
	// in turn, so one of the next few runs gets it.
	pairs := f.runPairs()
	home := filepath.Join(f.r.runsDir, pairs[0], "home")
	written := false
	for attempt := 0; !written && attempt < 32; attempt++ {
		out := f.run("touch " + filepath.Join(home, ".planted"))
		written = out.Ran && out.ExitCode == 0
		pooled()
	}
	if !written {
		t.Fatal("no run could write its own HOME")
	}
	// Once the pair is back in the pool, its HOME is empty (recycle), or
	// the pair is gone (removed when the pool was full).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		left, err := os.ReadDir(home)
		if os.IsNotExist(err) || (err == nil && len(left) == 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pair's HOME still holds %v", left)
		}
	}
	// And the runs that get that pair again see it empty. Two at a time:
	// a pair given back clean with its helper kept (giveBack) is the one
	// a lone run takes next, so lone runs seldom get the pair whose HOME
	// was cleared; pairs run in parallel do, most times (logged).
	seen := 0
	for attempt := 0; seen < 2 && attempt < 32; attempt++ {
		pooled()
		var outs [2]Outcome
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = f.run("ls -a " + home)
			}()
		}
		wg.Wait()
		for _, out := range outs {
			if !out.Ran || out.ExitCode != 0 {
				continue // another pair's run: that HOME is not in its view
			}
			seen++
			if strings.Contains(string(out.Stdout), ".planted") {
				t.Fatalf("the next run sees what the last one left in HOME: %+v", out)
			}
		}
	}
	t.Logf("runs that got the cleared pair: %d", seen)
	f.r.Close()
	if left, _ := os.ReadDir(filepath.Join(f.State, "terminald", "runs")); len(left) != 0 {
		t.Fatalf("Close left private directories behind: %v", left)
	}
}
