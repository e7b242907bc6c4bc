package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// serverBox runs the built binary in a directory of its own, as root or
// (through a setpriv wrapper named terminald) as the unprivileged user
// nobody, owner of every directory the server writes.
type serverBox struct {
	base, bin string
	unpriv    bool
	n         int
}

// asRootAndUnprivileged runs fn once with the server as root and once with
// it as an unprivileged user.
func asRootAndUnprivileged(t *testing.T, fn func(t *testing.T, b *serverBox)) {
	for _, unpriv := range []bool{false, true} {
		name := "root"
		if unpriv {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) { fn(t, newServerBox(t, unpriv)) })
	}
}

func newServerBox(t *testing.T, unpriv bool) *serverBox {
	t.Helper()
	if os.Getuid() != 0 && unpriv {
		t.Fatalf("the unprivileged pass needs the tests to run as root, to set up a server as uid %d", nobody)
	}
	base, err := os.MkdirTemp("", "bastion-box-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &serverBox{base: base, bin: bin, unpriv: unpriv}
	if unpriv {
		if err := os.Mkdir(filepath.Join(base, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		real := filepath.Join(base, "bin", "terminald.real")
		copyFile(t, bin, real, 0o755)
		b.bin = filepath.Join(base, "bin", "terminald")
		script := "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups " + real + " \"$@\"\n"
		if err := os.WriteFile(b.bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.dir(t, "home")
	b.dir(t, "xdg")
	return b
}

// dir makes base/name, owned by the server's user.
func (b *serverBox) dir(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(b.base, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	b.chown(t, p)
	return p
}

func (b *serverBox) chown(t *testing.T, p string) {
	t.Helper()
	if b.unpriv {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
}

// policy writes a sandbox-profile policy for jail with the state
// directory state, python3 allowlisted, and extra [terminal.sandbox] keys.
func (b *serverBox) policy(t *testing.T, jail, state, sandboxKeys string) string {
	t.Helper()
	b.n++
	audit := b.dir(t, fmt.Sprintf("audit-%d", b.n))
	p := filepath.Join(b.base, fmt.Sprintf("policy-%d.toml", b.n))
	doc := fmt.Sprintf("audit_log = %q\n[terminal]\nprofile = \"sandbox\"\njail_root = %q\n[terminal.state]\ndir = %q\n"+
		"[terminal.sandbox]\n%s\n[terminal.allowlist]\ncommands = [\"python3\"]\n",
		filepath.Join(audit, "audit.jsonl"), jail, state, sandboxKeys)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (b *serverBox) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(b.base, "home"), "XDG_STATE_HOME=" + filepath.Join(b.base, "xdg")}
}

// start starts the server over stdio.
func (b *serverBox) start(t *testing.T, pol string) (*client.Client, *exec.Cmd) {
	t.Helper()
	return mcpkittest.StartStdio(t, b.bin, b.env(), "--config", pol, "--log-level", "warn")
}

// once runs the binary with args and an empty stdin: a server starts, and
// stops at the end of its input.
func (b *serverBox) once(t *testing.T, args ...string) mcpkittest.Ran {
	t.Helper()
	return mcpkittest.Run(t, b.bin, b.env(), args...)
}

// writeScript puts a program into the jail, as an agent's file edit would.
func (b *serverBox) writeScript(t *testing.T, jail, name, body string) {
	t.Helper()
	p := filepath.Join(jail, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	b.chown(t, p)
}

// deepName is the name of each level of the trees plantPy leaves.
const deepName = "deep-directory-level-xyz"

// plantPy leaves, in $HOME and in $TMPDIR, a chain of 1,500 directories
// (a path nine times PATH_MAX) with a file in each, a mode-000 leaf, then
// makes every directory of the chain mode 000 and every tenth 0500 (where
// chmod is allowed). With "sleep TOKEN" it then writes planted.txt in the
// jail and sleeps, for the server to be killed.
const plantPy = `import os, sys, time
def plant(top):
    os.chdir(top)
    for i in range(1500):
        os.mkdir("` + deepName + `", 0o700)
        with open("f", "w") as f:
            f.write("left by the command")
        os.chdir("` + deepName + `")
    os.mkdir("leaf", 0)
    modes = True
    for i in range(1500):
        os.chdir("..")
        try:
            os.chmod("` + deepName + `", 0o500 if i % 10 == 0 else 0)
        except OSError:
            modes = False
            break
    os.chdir(top)
    return modes
jail = os.getcwd()
print("planted", plant(os.environ["HOME"]), plant(os.environ["TMPDIR"]), flush=True)
if len(sys.argv) > 1 and sys.argv[1] == "sleep":
    open(os.path.join(jail, "planted.txt"), "w").write("x")
    time.sleep(300)
`

// deepLeft reports where under dir a level of plantPy's trees is, or "".
// The test runs as root, whom the modes do not stop.
func deepLeft(t *testing.T, dir string) string {
	t.Helper()
	found := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == deepName {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil && found == "" {
		return "unreadable: " + err.Error()
	}
	return found
}

// TestCommandLeftoversInHomeAndTmpAreRemoved: a command in the sandbox
// leaves trees 1,500 directories deep with modes 000 and 0500 in its
// private HOME and TMPDIR. After the answer and the recycling of the pair,
// nothing of them is under the state directory. A server killed while
// such a command runs leaves them; the next server's start removes them.
// As root and unprivileged.
func TestCommandLeftoversInHomeAndTmpAreRemoved(t *testing.T) {
	asRootAndUnprivileged(t, func(t *testing.T, b *serverBox) {
		jail, state := b.dir(t, "jail"), b.dir(t, "state")
		b.writeScript(t, jail, "plant.py", plantPy)
		pol := b.policy(t, jail, state, "")
		c, cmd := b.start(t, pol)
		r := call(t, c, "run_command", map[string]any{"command": "python3 plant.py"})
		if out, _ := r.Detail["stdout"].(string); r.Code != "OK" || !strings.Contains(out, "planted True True") {
			t.Fatalf("the planting command: %+v", r)
		}
		runs := filepath.Join(state, "runs")
		var left string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if left = deepLeft(t, runs); left == "" {
				break
			}
		}
		if left != "" {
			t.Fatalf("after the run and the recycling, the command's tree is still under the state directory: %s", left)
		}

		// Killed while the command runs: the tree stays until the next start.
		tok := fmt.Sprintf("bastion-leftover-%d", time.Now().UnixNano())
		go func() {
			var req mcp.CallToolRequest
			req.Params.Name = "run_command"
			req.Params.Arguments = map[string]any{"command": "python3 plant.py sleep " + tok}
			_, _ = c.CallTool(context.Background(), req) // never answers: the server is killed
		}()
		planted := filepath.Join(jail, "planted.txt")
		for deadline := time.Now().Add(60 * time.Second); !exists(planted); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the command never planted its trees")
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_, _ = cmd.Process.Wait()
		if v := waitGone(t, tok); len(v) > 0 {
			t.Fatalf("processes of the command outlived the server: %v", v)
		}
		if deepLeft(t, runs) == "" {
			t.Fatal("the killed server's run directory does not hold the tree: nothing was proven")
		}
		if ran := b.once(t, "--config", pol, "--log-level", "warn"); ran.Code != 0 || strings.Contains(ran.Stderr, "could not be removed") {
			t.Fatalf("the next server: %+v", ran)
		}
		if left := deepLeft(t, runs); left != "" {
			t.Fatalf("the next server's start left the dead server's tree: %s", left)
		}
		if ents, _ := os.ReadDir(runs); len(ents) != 0 {
			t.Fatalf("run directories left after the next server's start and end: %v", ents)
		}
	})
}

// TestUnremovableRunDirectoryIsReportedWithItsSize: a run directory a
// server cannot remove (a file with the immutable attribute, which the
// test sets as root; an unprivileged server cannot remove it either) is
// listed by check with its size, and logged at start with its path, its
// size and the entry that stays; the rest of it is removed.
func TestUnremovableRunDirectoryIsReportedWithItsSize(t *testing.T) {
	asRootAndUnprivileged(t, func(t *testing.T, b *serverBox) {
		jail, state := b.dir(t, "jail"), b.dir(t, "state")
		pol := b.policy(t, jail, state, "")
		dead := filepath.Join(state, "runs", "i-dead")
		home := filepath.Join(dead, "r-1", "home")
		for _, d := range []string{filepath.Join(state, "runs"), dead, filepath.Join(dead, "r-1"), home, filepath.Join(dead, "r-1", "tmp")} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			b.chown(t, d)
		}
		stuck := filepath.Join(home, "stuck")
		for _, f := range []string{stuck, filepath.Join(dead, "r-1", "tmp", "removable"), filepath.Join(dead, ".lock")} {
			if err := os.WriteFile(f, []byte(strings.Repeat("x", 64<<10)), 0o600); err != nil {
				t.Fatal(err)
			}
			b.chown(t, f)
		}
		testfs.SetImmutable(t, stuck, true)
		t.Cleanup(func() { testfs.SetImmutable(t, stuck, false) })

		chk := b.once(t, "check", "--config", pol)
		if chk.Code != 0 || !strings.Contains(chk.Stdout, "run directory "+dead) || !strings.Contains(chk.Stdout, " bytes") {
			t.Fatalf("check does not list the leftover run directory with its size: %+v", chk)
		}
		ran := b.once(t, "--config", pol, "--log-level", "warn")
		line := ""
		for _, l := range strings.Split(ran.Stderr, "\n") {
			if strings.Contains(l, "could not be removed") {
				line = l
			}
		}
		m := regexp.MustCompile(`bytes=(\d+)`).FindStringSubmatch(line)
		if ran.Code != 0 || !strings.Contains(line, dead) || !strings.Contains(line, "r-1/home/stuck") || m == nil {
			t.Fatalf("the start does not log the unremovable run directory with its path, size and entry: %+v", ran)
		}
		if n, _ := strconv.Atoi(m[1]); n < 64<<10 {
			t.Fatalf("reported size %d, want at least the 64 KiB immutable file", n)
		}
		if exists(filepath.Join(dead, "r-1", "tmp")) || !exists(stuck) {
			t.Fatal("want the removable part gone and the immutable file still there")
		}
		chk = b.once(t, "check", "--config", pol)
		if !strings.Contains(chk.Stdout, "run directory "+dead) {
			t.Fatalf("after the start, check no longer lists what stays: %+v", chk)
		}
	})
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
