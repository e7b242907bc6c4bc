package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/sandbox"
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
	jail      string
	state     string
	auditDir  string
	auditPath string
	r         *Runner
}

func canon(t testing.TB, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func landlockMode() sandbox.Mode {
	if runtime.GOOS == "linux" {
		return sandbox.ModeRequired
	}
	return sandbox.ModeBestEffort
}

func newFixture(t testing.TB, opts ...func(*Options)) *fixture {
	t.Helper()
	f := &fixture{jail: canon(t, t.TempDir()), state: canon(t, t.TempDir())}
	root, err := jail.OpenRoot(f.jail)
	if err != nil {
		t.Fatalf("OpenRoot: %v", err)
	}
	t.Cleanup(func() { root.Close() })
	f.auditDir = filepath.Join(f.state, "audit")
	f.auditPath = filepath.Join(f.auditDir, "terminald.audit.jsonl")
	alog, err := audit.Open(audit.Options{Path: f.auditPath, Server: "terminald", Roots: []string{f.jail}})
	if err != nil {
		t.Fatalf("audit.Open: %v", err)
	}
	t.Cleanup(func() { alog.Close() })
	pol, err := config.LoadFile(examplePolicy)
	if err != nil {
		t.Fatalf("loading %s: %v", examplePolicy, err)
	}
	o := Options{TerminalRuntime: config.TerminalRuntime{Policy: pol.Terminal.CommandPolicy(), Landlock: landlockMode(),
		StateDir: filepath.Join(f.state, "terminald"), Timeout: 20 * time.Second}, Root: root, Audit: alog}
	for _, fn := range opts {
		fn(&o)
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		t.Fatal(err)
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

func write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
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

// auditRecords reads the audit log's records.
func (f *fixture) auditRecords(t testing.TB) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(f.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
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
