package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/runner/runnertest"
)

// spawnerName is the argv[0] under which the test binary acts as a program
// that starts a grandchild (sleep), writes a token naming the grandchild to
// spawn.pid in its working directory, and then sleeps itself. The sandbox
// helper re-exec needs nothing here: importing safety/sandbox gives this
// test binary its init hook.
const spawnerName = "bastion-spawn"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == spawnerName {
		// The grandchild carries a token in its command line: pids inside
		// the sandbox are not the host's, so the test finds it by token.
		wd, _ := os.Getwd()
		tok := "bastion-spawned-" + filepath.Base(wd) + strconv.Itoa(os.Getpid())
		c := exec.Command("/bin/sh", "-c", "sleep 300; : "+tok)
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		if err := os.WriteFile("spawn.pid", []byte(tok), 0o644); err != nil {
			os.Exit(4)
		}
		time.Sleep(300 * time.Second)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const examplePolicy = "../../policies/policy.example.toml"

// fixture is one Runner on a fresh jail with a real audit log and a state
// directory outside the jail, under the shipped example command policy.
type fixture struct {
	*runnertest.Env
	r *Runner
}

func newFixture(t testing.TB, opts ...func(*Options)) *fixture {
	t.Helper()
	f := &fixture{Env: runnertest.New(t, examplePolicy)}
	o := Options{TerminalRuntime: f.Runtime, Root: f.Root, Audit: f.Audit}
	for _, fn := range opts {
		fn(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(r.Close)
	f.r = r
	return f
}

func (f *fixture) run(line string) Outcome { return f.runIn(line, "") }

func (f *fixture) runIn(line, cwd string) Outcome {
	return f.r.Run(context.Background(), Request{Line: line, Cwd: cwd})
}

// wantNothingRan requires a refusal with the code, a reason and no output.
func wantNothingRan(t testing.TB, out Outcome, code string) {
	t.Helper()
	if out.Ran || string(out.Code) != code || out.Err == nil {
		t.Fatalf("got ran=%v %s (%s), want %s and nothing run", out.Ran, out.Code, out.Reason, code)
	}
	if out.Reason == "" {
		t.Fatal("refusal without a reason")
	}
	if out.Stdout != nil || out.Stderr != nil || out.Confinement != "" {
		t.Fatalf("a refusal carries run results: %+v", out)
	}
}

// runPairs lists the private HOME/TMPDIR pairs in the runner's own runs
// directory (its lock file aside).
func (f *fixture) runPairs() []string {
	ents, _ := os.ReadDir(f.r.runsDir)
	var names []string
	for _, d := range ents {
		if d.IsDir() {
			names = append(names, d.Name())
		}
	}
	return names
}
