package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/command"
	"github.com/bastion-mcp/bastion/safety/sandbox"
)

// runtimeTerminal is a [terminal] section terminald accepts, on a fresh
// jail with a state directory outside it.
func runtimeTerminal(t *testing.T) (Terminal, string) {
	t.Helper()
	var term Terminal
	term.JailRoot = t.TempDir()
	term.Allowlist.Commands = []string{"ls", "echo"}
	term.State.Dir = filepath.Join(t.TempDir(), "state")
	return term, term.JailRoot
}

func TestTerminalRuntimeRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Terminal)
		want string
	}{
		{"invalid command policy", func(t *Terminal) { t.Allowlist.Commands = []string{"sh", "ls"} }, "sh"},
		{"empty allowlist", func(t *Terminal) { t.Allowlist.Commands = nil },
			"[terminal.allowlist] commands is empty: nothing could run; list the programs terminald may run"},
		{"pass entry with =", func(t *Terminal) { t.Env.Pass = []string{"A=B"} }, `[terminal.env] pass entry "A=B" is not a variable name`},
		{"empty pass entry", func(t *Terminal) { t.Env.Pass = []string{""} }, `[terminal.env] pass entry "" is not a variable name`},
		{"pass PATH", func(t *Terminal) { t.Env.Pass = []string{"PATH"} }, "[terminal.env] pass must not list PATH: terminald sets it"},
		{"pass HOME", func(t *Terminal) { t.Env.Pass = []string{"HOME"} }, "[terminal.env] pass must not list HOME: terminald sets it"},
		{"pass TMPDIR", func(t *Terminal) { t.Env.Pass = []string{"TMPDIR"} }, "[terminal.env] pass must not list TMPDIR: terminald sets it"},
		{"relative path entry", func(t *Terminal) { t.Env.Path = []string{"bin"} },
			`terminal.env.path entry "bin" must be an absolute directory without ':'`},
		{"path entry with colon", func(t *Terminal) { t.Env.Path = []string{"/usr/bin:/bin"} }, "must be an absolute directory without ':'"},
		{"state inside the jail", func(t *Terminal) { t.State.Dir = filepath.Join(t.JailRoot, "state") }, "lies inside root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			term, jail := runtimeTerminal(t)
			c.edit(&term)
			_, err := term.Runtime(jail, state(t.TempDir()))
			if err == nil {
				t.Fatalf("Runtime accepted %+v", term)
			}
			wantFatal(t, err, c.want)
			if c.name != "state inside the jail" && pathExists(term.State.Dir) {
				t.Fatal("the state directory was created before the refusal")
			}
		})
	}
}

func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestTerminalRuntimeConverts(t *testing.T) {
	term, jail := runtimeTerminal(t)
	term.State.Dir = ""
	term.Env.Pass = []string{"BASTION_RUNTIME_SET", "BASTION_RUNTIME_UNSET"}
	t.Setenv("BASTION_RUNTIME_SET", "v")
	term.Limits.MemoryMB = 64
	term.Limits.MaxQueued = 3
	term.RawOutput = true
	term.Rules = []TerminalRule{{Command: "ls", DenyArgs: []string{"-R"}, Reason: "no recursion"}}
	base := t.TempDir()
	rt, err := term.Runtime(jail, state(base))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rt.Policy.Allow, []string{"ls", "echo"}) || len(rt.Policy.Rules) != 1 || rt.Policy.Sandboxed {
		t.Errorf("policy %+v", rt.Policy)
	}
	if !slices.Equal(rt.PassEnv, []string{"BASTION_RUNTIME_SET=v"}) {
		t.Errorf("pass %q: want only the variable that is set", rt.PassEnv)
	}
	if rt.Timeout != 30*time.Second || rt.MaxOutputBytes != 65536 || rt.Limits.MemoryMB != 64 || rt.Limits.MaxProcesses != DefaultMaxProcesses {
		t.Errorf("limits: timeout %s output %d %+v", rt.Timeout, rt.MaxOutputBytes, rt.Limits)
	}
	if rt.MaxConcurrent != DefaultMaxConcurrent || rt.MaxQueued != 3 || !rt.RawOutput {
		t.Errorf("max_concurrent %d max_queued %d raw_output %v", rt.MaxConcurrent, rt.MaxQueued, rt.RawOutput)
	}
	if !slices.Equal(rt.Path, command.DefaultPath) || rt.Net != sandbox.NetDeny || rt.Landlock != sandbox.ModeRequired ||
		rt.Isolation != sandbox.IsolationNamespaces {
		t.Errorf("path %q net %q landlock %q isolation %q", rt.Path, rt.Net, rt.Landlock, rt.Isolation)
	}
	if want := filepath.Join(base, "terminald"); rt.StateDir != want || !pathExists(want) {
		t.Errorf("state dir %q (want %s, created)", rt.StateDir, want)
	}
}

func TestTerminalRuntimeCheckBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		rt   TerminalRuntime
		want string // "" accepts
	}{
		{"defaults", TerminalRuntime{}, ""},
		{"shortest timeout", TerminalRuntime{Timeout: time.Second}, ""},
		{"timeout too short", TerminalRuntime{Timeout: time.Second / 2}, "terminal.limits.timeout_seconds must be between 1 and 3600"},
		{"timeout too long", TerminalRuntime{Timeout: 2 * time.Hour}, "terminal.limits.timeout_seconds must be between 1 and 3600"},
		{"output too large", TerminalRuntime{MaxOutputBytes: 16<<20 + 1}, "terminal.limits.max_output_bytes must be between 1 and 16777216"},
		{"negative output", TerminalRuntime{MaxOutputBytes: -1}, "max_output_bytes"},
		{"too many at once", TerminalRuntime{MaxConcurrent: 65}, "terminal.limits.max_concurrent must be between 1 and 64"},
		{"queue too long", TerminalRuntime{MaxQueued: 1025}, "terminal.limits.max_queued must be between 1 and 1024"},
		{"relative path", TerminalRuntime{Path: []string{"/bin", "."}}, `terminal.env.path entry "."`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := c.rt
			err := rt.Check()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			case c.want == "" && (rt.Timeout < time.Second || rt.MaxOutputBytes == 0 || len(rt.Path) == 0 || rt.Net == ""):
				t.Fatalf("defaults not applied: %+v", rt)
			}
		})
	}
}

// TestCheckReportsTerminaldStartRefusals: check reports as errors the
// refusals terminald makes at start, each one, and sweepd's check ignores
// them (Load accepts them for every server).
func TestCheckReportsTerminaldStartRefusals(t *testing.T) {
	p := &Policy{}
	p.Terminal.JailRoot = t.TempDir()
	p.Terminal.Env.Pass = []string{"A=B", "HOME"}
	p.Terminal.Env.Path = []string{"bin"}
	e := p.Effective("terminald", CheckOptions{StateDir: state(t.TempDir())})
	for _, want := range []string{"[terminal.allowlist] commands is empty", `pass entry "A=B" is not a variable name`,
		"pass must not list HOME", `terminal.env.path entry "bin"`} {
		if !has(e.Errors, want) {
			t.Errorf("errors lack %q: %q", want, e.Errors)
		}
	}
	p.Sweep.Roots = []string{t.TempDir()}
	if e := p.Effective("sweepd", CheckOptions{StateDir: state(t.TempDir())}); len(e.Errors) != 0 {
		t.Fatalf("sweepd refuses terminald's section: %q", e.Errors)
	}
}
