package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// nobody is the unprivileged user the server runs as in these tests.
const nobody = 65534

// TestBinaryRunsUnprivileged runs the real binary as an unprivileged user,
// as people run it: the namespaces start without any privilege, commands
// run and are confined, what they create belongs to that user with no
// setuid bit, and what lies outside the jail stays out of reach.
func TestBinaryRunsUnprivileged(t *testing.T) {
	base, err := os.MkdirTemp("", "bastion-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "bin", "jail", "home", "state", "away"} {
		p := filepath.Join(base, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if d != "bin" && d != "" {
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The binary, where the unprivileged user can execute it, behind a
	// wrapper named like it (the client checks the server's name).
	real := filepath.Join(base, "bin", "terminald.real")
	copyFile(t, bin, real, 0o755)
	wrapper := filepath.Join(base, "bin", "terminald")
	script := "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(base, "away", "canary")
	if err := os.WriteFile(canary, []byte("CANARY-OUTSIDE"), 0o644); err != nil {
		t.Fatal(err)
	}
	jail := filepath.Join(base, "jail")
	pol := filepath.Join(base, "policy.toml")
	doc := "audit_log = \"" + filepath.Join(base, "state", "audit.jsonl") + "\"\n[terminal]\nprofile = \"sandbox\"\njail_root = \"" + jail +
		"\"\n[terminal.state]\ndir = \"" + filepath.Join(base, "state", "t") + "\"\n[terminal.allowlist]\ncommands = [\"sh\", \"cat\", \"echo\"]\n"
	if err := os.WriteFile(pol, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(base, "home"), "XDG_STATE_HOME=" + filepath.Join(base, "state")}
	c, _ := mcpkittest.StartStdio(t, wrapper, env, "--config", pol, "--log-level", "warn")

	r := call(t, c, "run_command", map[string]any{"command": `sh -c "echo made > made.txt; chmod 4755 made.txt; cat made.txt"`})
	if r.Code != "OK" || !strings.Contains(r.Detail["stdout"].(string), "made") {
		t.Fatalf("run_command as an unprivileged server: %+v", r)
	}
	if conf, _ := r.Detail["confinement"].(string); !strings.HasPrefix(conf, "namespaces(") {
		t.Fatalf("confinement %q", conf)
	}
	fi, err := os.Stat(filepath.Join(jail, "made.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Fatalf("made.txt: uid %d mode %v, want uid %d and no setuid bit", st.Uid, fi.Mode(), nobody)
	}
	r = call(t, c, "run_command", map[string]any{"command": "cat " + canary})
	if out, _ := r.Detail["stdout"].(string); strings.Contains(out, "CANARY") || r.Detail["exit_code"] == float64(0) {
		t.Fatalf("a file outside the jail was read: %+v", r)
	}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	if mode&0o111 != 0 {
		// A program: written by another process, or a parallel test's fork
		// could inherit the open file and its exec fail with ETXTBSY.
		testfs.CopyExecutable(t, src, dst)
		if err := os.Chmod(dst, mode); err != nil {
			t.Fatal(err)
		}
		return
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBinaryRefusesWhenNamespacesAreDenied starts the binary where the
// kernel refuses it user namespaces (inside a user namespace whose
// user.max_user_namespaces is 0, as a distribution that restricts them
// would): with isolation "namespaces" it exits with a fatal line that says
// what to change; with isolation "landlock" it starts.
func TestBinaryRefusesWhenNamespacesAreDenied(t *testing.T) {
	jail := t.TempDir()
	deny := func(pol string) mcpkittest.Ran {
		return mcpkittest.Run(t, "/usr/bin/unshare", cleanEnv(t), "-U", "-r", "/bin/sh", "-c",
			`echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" --config "$1"`, bin, pol)
	}
	r := deny(policy(t, jail, allow))
	wantFatal(t, r, "user namespace", `isolation = "landlock"`)
	r = deny(policy(t, jail, "[terminal.sandbox]\nisolation = \"landlock\"\n"+allow))
	if strings.Contains(r.Stderr, "fatal:") || !strings.Contains(r.Stderr, "terminald ready") {
		t.Fatalf("with isolation = \"landlock\" terminald did not start where namespaces are denied: %+v", r)
	}
}

// TestCheckRefusesWhenNamespacesAreDenied: check reports the refusal the
// server makes at start (Terminal.Preflight) as an error.
func TestCheckRefusesWhenNamespacesAreDenied(t *testing.T) {
	pol := policy(t, t.TempDir(), allow)
	r := mcpkittest.Run(t, "/usr/bin/unshare", cleanEnv(t, "XDG_STATE_HOME="+t.TempDir()), "-U", "-r", "/bin/sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" check --config "$1"`, bin, pol)
	if r.Code != 1 || !strings.Contains(r.Stdout, "error: [terminal.sandbox] landlock = \"required\", isolation = \"namespaces\"") ||
		!strings.Contains(r.Stdout, "user namespace") {
		t.Fatalf("check where namespaces are denied: %+v", r)
	}
}
