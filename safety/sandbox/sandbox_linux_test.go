package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/bastion-mcp/bastion/safety/testfs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestMain lets the test binary double as the helper processes some tests
// need: a child that tries to bind a TCP port, and a "server" that is killed
// while its child runs.
func TestMain(m *testing.M) {
	switch os.Getenv("BASTION_SANDBOX_HELPER") {
	case "bind":
		// Go listeners try Multipath TCP first, then fall back to TCP.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(3)
		}
		ln.Close()
		os.Exit(0)
	case "mptcp":
		// A raw MPTCP connect, which Landlock's TCP rule does not see.
		port, _ := strconv.Atoi(os.Getenv("BASTION_SANDBOX_PORT"))
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
		if err != nil {
			os.Exit(3)
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	case "sockets":
		// SCTP and io_uring, refused by the filter with EACCES.
		code := 0
		if _, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP); err != unix.EACCES {
			code |= 1
		}
		var params [120]byte
		if _, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0); errno != unix.EACCES {
			code |= 2
		}
		os.Exit(code)
	case "server":
		jail := os.Getenv("BASTION_SANDBOX_JAIL")
		s := Spec{
			Path: "/bin/sh", Argv: []string{"sh", "-c", "echo $$ > " + filepath.Join(jail, "child.pid") + "; " +
				detached(os.Getenv("BASTION_SANDBOX_TOKEN")) + "wait"},
			Dir: jail, JailRoot: jail, TempDir: os.Getenv("BASTION_SANDBOX_TMP"), HomeDir: os.Getenv("BASTION_SANDBOX_HOME"),
			PathEnv: testPATH, Landlock: ModeRequired, Timeout: time.Minute,
		}
		_, _ = Run(context.Background(), s)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testPATH is the scrubbed PATH the tests hand to children.
const testPATH = "/usr/local/bin:/usr/bin:/bin"

// box is one test's jail, private temp and private home, plus captured output.
type box struct {
	jail, tmp, home string
	stdout, stderr  testfs.SyncBuffer
}

func newBox(t testing.TB) *box {
	t.Helper()
	base := t.TempDir()
	b := &box{jail: filepath.Join(base, "jail"), tmp: filepath.Join(base, "tmp"), home: filepath.Join(base, "home")}
	for _, d := range []string{b.jail, b.tmp, b.home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// lookPath resolves a program the way the caller would, through testPATH.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(testPATH) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	t.Fatalf("%s is not installed; the sandbox tests need it", name)
	return ""
}

// spec builds a required-Landlock, network-denied Spec running argv.
func (b *box) spec(t testing.TB, argv ...string) Spec {
	t.Helper()
	return Spec{
		Path: lookPath(t, argv[0]), Argv: argv, Dir: b.jail,
		JailRoot: b.jail, TempDir: b.tmp, HomeDir: b.home,
		PathEnv: testPATH, Landlock: ModeRequired, Timeout: 10 * time.Second,
		Stdout: &b.stdout, Stderr: &b.stderr,
	}
}

func (b *box) run(t testing.TB, s Spec) Outcome {
	t.Helper()
	out, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q): %v (stderr %q)", s.Argv, err, b.stderr.String())
	}
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// processGone reports whether pid is dead (gone or a zombie), polling up to
// two seconds because SIGKILL is delivered asynchronously.
func processGone(pid int) bool {
	deadline := time.Now().Add(2 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state letter follows the parenthesised command name.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
			if st := stat[i+2]; st == 'Z' || st == 'X' {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid was written to the pid file")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLandlockIsAvailableHere(t *testing.T) {
	abi, err := Probe()
	if err != nil || abi < 1 {
		t.Fatalf("Probe() = %d, %v; the sandbox tests need a kernel with Landlock", abi, err)
	}
	desc, err := Check(ModeRequired)
	if err != nil || !strings.HasPrefix(desc, "landlock-abi") {
		t.Fatalf("Check(required) = %q, %v", desc, err)
	}
	t.Logf("Landlock ABI %d: %s", abi, desc)
}

func TestAllowedProgramCanWriteInsideJail(t *testing.T) {
	b := newBox(t)
	out := b.run(t, b.spec(t, "touch", filepath.Join(b.jail, "made"), filepath.Join(b.tmp, "t"), filepath.Join(b.home, "h")))
	if out.ExitCode != 0 {
		t.Fatalf("touch inside the writable trees failed: %+v %q", out, b.stderr.String())
	}
	for _, p := range []string{filepath.Join(b.jail, "made"), filepath.Join(b.tmp, "t"), filepath.Join(b.home, "h")} {
		if !exists(p) {
			t.Fatalf("%s was not created", p)
		}
	}
	if !strings.Contains(out.Confinement, "landlock-abi") || !strings.HasPrefix(out.Confinement, "namespaces(") {
		t.Fatalf("confinement = %q", out.Confinement)
	}
}

func TestAllowedProgramCannotWriteOutsideJail(t *testing.T) {
	b := newBox(t)
	other := t.TempDir()
	globalTmp := filepath.Join(os.TempDir(), fmt.Sprintf("bastion-escape-%d", time.Now().UnixNano()))
	t.Cleanup(func() { os.Remove(globalTmp) })
	for _, target := range []string{
		filepath.Join(other, "escaped"), // another project's directory
		globalTmp,                       // the global temp directory
		filepath.Join(filepath.Dir(b.jail), "sibling"), // next to the jail
		filepath.Join(b.jail, "..", "dotdot"),          // a .. spelling
	} {
		out := b.run(t, b.spec(t, "touch", target))
		if out.ExitCode == 0 || exists(target) {
			t.Fatalf("touch %s outside the jail succeeded: %+v", target, out)
		}
	}
	// cp of a jail file to the outside fails the same way.
	src := filepath.Join(b.jail, "src")
	if err := os.WriteFile(src, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(other, "copied")
	if out := b.run(t, b.spec(t, "cp", src, dst)); out.ExitCode == 0 || exists(dst) {
		t.Fatalf("cp to outside the jail succeeded: %+v", out)
	}
}

func TestCannotOverwriteExistingFileOutsideJail(t *testing.T) {
	b := newBox(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("original"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(b.jail, "src")
	if err := os.WriteFile(src, []byte("evil"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.run(t, b.spec(t, "cp", src, victim))
	b.run(t, b.spec(t, "truncate", "-s", "0", victim))
	if got, _ := os.ReadFile(victim); string(got) != "original" {
		t.Fatalf("a file outside the jail was changed to %q", got)
	}
}

func TestCannotReadFileInAnotherTmpDirectory(t *testing.T) {
	b := newBox(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := b.run(t, b.spec(t, "cat", secret))
	if out.ExitCode == 0 || strings.Contains(b.stdout.String(), "TOP-SECRET") {
		t.Fatalf("cat of a file in another temp directory succeeded: %+v %q", out, b.stdout.String())
	}
	// Listing the global temp directory is refused too.
	b2 := newBox(t)
	if out := b2.run(t, b2.spec(t, "ls", os.TempDir())); out.ExitCode == 0 {
		t.Fatalf("ls of the global temp directory succeeded: %q", b2.stdout.String())
	}
	// The control: the same file copied into the jail is readable.
	b3 := newBox(t)
	inside := filepath.Join(b3.jail, "ok.txt")
	if err := os.WriteFile(inside, []byte("visible"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := b3.run(t, b3.spec(t, "cat", inside)); out.ExitCode != 0 || b3.stdout.String() != "visible" {
		t.Fatalf("cat inside the jail: %+v %q", out, b3.stdout.String())
	}
}

func TestCannotReadSystemSecretsOutsideReadPaths(t *testing.T) {
	b := newBox(t)
	// /etc/shadow is readable by root without the sandbox; /etc itself is
	// listed only file by file in DefaultReadPaths.
	out := b.run(t, b.spec(t, "ls", "/etc"))
	if out.ExitCode == 0 {
		t.Fatalf("ls /etc succeeded under the sandbox")
	}
	b2 := newBox(t)
	if out := b2.run(t, b2.spec(t, "cat", "/etc/shadow")); out.ExitCode == 0 {
		t.Fatalf("cat /etc/shadow succeeded under the sandbox")
	}
}

func TestCannotExecuteFileWrittenInJail(t *testing.T) {
	b := newBox(t)
	// A copy of a real binary, placed in the jail as an attacker would.
	planted := filepath.Join(b.jail, "planted")
	data, err := os.ReadFile(lookPath(t, "true"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, data, 0o755); err != nil {
		t.Fatal(err)
	}
	s := b.spec(t, "true")
	s.Path, s.Argv = planted, []string{"planted"}
	_, err = Run(context.Background(), s)
	if err == nil {
		t.Fatalf("a binary written into the jail was executed")
	}
	if code := result.CodeOf(err); code != result.OperationFailed {
		t.Fatalf("code = %s, want OPERATION_FAILED (%v)", code, err)
	}
	// env (an allowed binary) cannot exec it either.
	b2 := newBox(t)
	if out := b2.run(t, b2.spec(t, "env", planted)); out.ExitCode == 0 {
		t.Fatalf("env exec of a planted binary succeeded")
	}
}

func TestCannotCreateDeviceNodeAsRoot(t *testing.T) {
	b := newBox(t)
	node := filepath.Join(b.jail, "disk")
	out := b.run(t, b.spec(t, "mknod", node, "b", "8", "0"))
	if out.ExitCode == 0 || exists(node) {
		t.Fatalf("mknod of a block device in the jail succeeded")
	}
}

// listen starts a loopback TCP listener and reports whether anything
// connected before stop is called.
func listen(t *testing.T) (port int, stop func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() bool {
		select {
		case ok := <-accepted:
			ln.Close()
			return ok
		case <-time.After(200 * time.Millisecond):
			ln.Close()
			return <-accepted
		}
	}
}

func TestCannotConnectToLoopbackListener(t *testing.T) {
	b := newBox(t)
	port, stop := listen(t)
	s := b.spec(t, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port))
	out := b.run(t, s)
	if connected := stop(); connected || out.ExitCode == 0 {
		t.Fatalf("the child connected to a loopback listener (exit %d, listener saw a connection: %v)", out.ExitCode, connected)
	}
	if !strings.Contains(out.Confinement, "net") {
		t.Fatalf("confinement %q does not mention net", out.Confinement)
	}
}

func TestCannotBindTCPPort(t *testing.T) {
	// The test binary itself is the child here (bash cannot bind), so its
	// directory is added to the read paths. With landlock isolation a
	// denied network means no socket at all; with namespaces the command
	// may bind its own loopback (a test server), which reaches nothing.
	for _, c := range []struct {
		iso      Isolation
		network  bool
		wantExit int
	}{{IsolationLandlock, false, 3}, {IsolationLandlock, true, 0}, {IsolationNamespaces, false, 0}} {
		t.Run(netCase(c.iso, c.network), func(t *testing.T) {
			b := newBox(t)
			s := b.spec(t, "true")
			s.Path, s.Argv = os.Args[0], []string{"helper"}
			s.ReadPaths = append([]string{filepath.Dir(os.Args[0])}, DefaultReadPaths...)
			s.Env = []string{"BASTION_SANDBOX_HELPER=bind"}
			s.Network, s.Isolation = c.network, c.iso
			if out := b.run(t, s); out.ExitCode != c.wantExit {
				t.Fatalf("%s, network %v: bind exit %d, want %d (%q)", c.iso, c.network, out.ExitCode, c.wantExit, b.stderr.String())
			}
		})
	}
}

// netCase names a subtest after an isolation and a network setting.
func netCase(iso Isolation, network bool) string {
	if network {
		return string(iso) + " network allowed"
	}
	return string(iso) + " network denied"
}

func TestCannotConnectThroughMultipathTCP(t *testing.T) {
	for _, c := range []struct {
		iso     Isolation
		network bool
	}{{IsolationLandlock, false}, {IsolationLandlock, true}, {IsolationNamespaces, false}, {IsolationNamespaces, true}} {
		t.Run(netCase(c.iso, c.network), func(t *testing.T) {
			network := c.network
			b := newBox(t)
			port, stop := listen(t)
			s := b.spec(t, "true")
			s.Path, s.Argv = os.Args[0], []string{"helper"}
			s.ReadPaths = append([]string{filepath.Dir(os.Args[0])}, DefaultReadPaths...)
			s.Env = []string{"BASTION_SANDBOX_HELPER=mptcp", fmt.Sprintf("BASTION_SANDBOX_PORT=%d", port)}
			s.Network, s.Isolation = network, c.iso
			out := b.run(t, s)
			connected := stop()
			if !network && (connected || out.ExitCode == 0) {
				t.Fatalf("an MPTCP socket reached the loopback listener with the network denied (exit %d)", out.ExitCode)
			}
			if network && (!connected || out.ExitCode != 0) {
				t.Fatalf("with network allowed the MPTCP connect failed: exit %d", out.ExitCode)
			}
		})
	}
}

func TestSCTPAndIOUringAreRefusedWhenNetworkDenied(t *testing.T) {
	b := newBox(t)
	s := b.spec(t, "true")
	s.Path, s.Argv = os.Args[0], []string{"helper"}
	s.ReadPaths = append([]string{filepath.Dir(os.Args[0])}, DefaultReadPaths...)
	s.Env = []string{"BASTION_SANDBOX_HELPER=sockets"}
	s.Isolation = IsolationLandlock
	if out := b.run(t, s); out.ExitCode != 0 {
		t.Fatalf("helper exit %d: bit 1 = SCTP socket not refused, bit 2 = io_uring not refused", out.ExitCode)
	}
	// With the network allowed, or with namespaces (whose network namespace
	// is the wall), sockets are not refused by the filter, but io_uring
	// still is.
	for _, c := range []struct {
		iso     Isolation
		network bool
	}{{IsolationLandlock, true}, {IsolationNamespaces, false}} {
		t.Run(netCase(c.iso, c.network), func(t *testing.T) {
			s.Network, s.Isolation = c.network, c.iso
			out := b.run(t, s)
			if out.ExitCode&1 == 0 {
				t.Fatalf("%s, network %v: SCTP was refused with EACCES: the test proves nothing", c.iso, c.network)
			}
			if out.ExitCode&2 != 0 {
				t.Fatalf("%s, network %v: io_uring was not refused", c.iso, c.network)
			}
		})
	}
}

func TestNetworkAllowLetsConnect(t *testing.T) {
	b := newBox(t)
	port, stop := listen(t)
	s := b.spec(t, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port))
	s.Network = true
	out := b.run(t, s)
	if connected := stop(); !connected || out.ExitCode != 0 {
		t.Fatalf("with network allowed the child could not connect: exit %d, connected %v, stderr %q",
			out.ExitCode, connected, b.stderr.String())
	}
	if !strings.Contains(out.Confinement, "network allowed") {
		t.Fatalf("confinement %q does not say the network is allowed", out.Confinement)
	}
}

func TestCannotSignalProcessOutsideSandbox(t *testing.T) {
	abi, _ := Probe()
	if abi < 6 {
		t.Fatalf("this test needs Landlock ABI 6 (signal scoping); kernel has %d", abi)
	}
	b := newBox(t)
	// Signal 0 only probes permission, so a failure of the sandbox cannot
	// kill the test process.
	out := b.run(t, b.spec(t, "sh", "-c", fmt.Sprintf("kill -0 %d", os.Getpid())))
	if out.ExitCode == 0 {
		t.Fatalf("the child may signal the server process")
	}
	// The control: it may signal itself.
	b2 := newBox(t)
	if out := b2.run(t, b2.spec(t, "sh", "-c", "kill -0 $$")); out.ExitCode != 0 {
		t.Fatalf("the child could not signal itself: %q", b2.stderr.String())
	}
}

// token returns a word unique to this test run, to find its processes in
// the host's process table: pids inside the sandbox are not host pids.
func token(t *testing.T) string {
	return fmt.Sprintf("bastion-token-%d-%d", os.Getpid(), time.Now().UnixNano())
}

// survivors returns the host pids whose command line contains tok, waiting
// up to two seconds for them to go (SIGKILL is asynchronous).
func survivors(tok string) []int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err == nil && bytes.Contains(cl, []byte(tok)) && !processGone(pid) {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			for _, p := range pids {
				unix.Kill(p, unix.SIGKILL)
			}
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// detached is a shell line that starts a sleeper carrying tok in its
// command line, detached from the group (setsid) and double-forked.
func detached(tok string) string {
	return fmt.Sprintf("(setsid sh -c 'sleep 60; : %[1]s' >/dev/null 2>&1 </dev/null &) ; (sh -c 'sleep 60; : %[1]s' >/dev/null 2>&1 </dev/null &) ; sleep 60 & ", tok)
}

func TestNoGrandchildSurvivesTimeout(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			tok := token(t)
			s := b.spec(t, "sh", "-c", detached(tok)+"wait")
			s.Isolation = iso
			s.Timeout = 500 * time.Millisecond
			start := time.Now()
			out, err := Run(context.Background(), s)
			if result.CodeOf(err) != result.Timeout || !out.TimedOut || out.Limit != LimitTimeout {
				t.Fatalf("%s: Run = %+v, %v; want TIMEOUT", iso, out, err)
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("%s: Run took %v after a 500ms timeout", iso, el)
			}
			if p := survivors(tok); len(p) > 0 {
				t.Fatalf("%s: processes %v survived the timeout", iso, p)
			}
		})
	}
}

func TestNoGrandchildSurvivesNormalExit(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			tok := token(t)
			s := b.spec(t, "sh", "-c", detached(tok)+"sleep 0.2; exit 0")
			s.Isolation = iso
			out := b.run(t, s)
			if out.ExitCode != 0 || out.TimedOut {
				t.Fatalf("%s: outcome %+v %q", iso, out, b.stderr.String())
			}
			if p := survivors(tok); len(p) > 0 {
				t.Fatalf("%s: processes %v survived the command's exit", iso, p)
			}
		})
	}
}

func TestGrandchildHoldingPipeDoesNotBlock(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			tok := token(t)
			// The grandchild keeps stdout and stderr open and sleeps.
			s := b.spec(t, "sh", "-c", "sh -c 'sleep 30; : "+tok+"' & echo parent-done; exit 0")
			s.Isolation = iso
			s.Timeout = 20 * time.Second
			start := time.Now()
			out := b.run(t, s)
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("%s: Run waited %v for a grandchild holding the pipes", iso, el)
			}
			if out.ExitCode != 0 || out.TimedOut || !strings.Contains(b.stdout.String(), "parent-done") {
				t.Fatalf("%s: outcome %+v stdout %q", iso, out, b.stdout.String())
			}
			if p := survivors(tok); len(p) > 0 {
				t.Fatalf("%s: processes %v survived", iso, p)
			}
		})
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("BASTION_TEST_SECRET", "hunter2-do-not-leak")
	t.Setenv("LD_PRELOAD", "")
	b := newBox(t)
	s := b.spec(t, "env")
	s.Env = []string{"GIT_AUTHOR_NAME=Operator Allowed"}
	b.run(t, s)
	got := strings.Split(strings.TrimSpace(b.stdout.String()), "\n")
	want := []string{"PATH=" + testPATH, "HOME=" + b.home, "LANG=C.UTF-8", "TMPDIR=" + b.tmp, "GIT_AUTHOR_NAME=Operator Allowed"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("child environment:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(b.stdout.String(), "hunter2") {
		t.Fatalf("a secret of the server's environment reached the child")
	}
}

func TestOperatorCannotOverrideSandboxVariables(t *testing.T) {
	b := newBox(t)
	for _, kv := range []string{"HOME=/", "PATH=/tmp", "TMPDIR=/tmp", "NOEQUALS", "=x"} {
		t.Run(kv, func(t *testing.T) {
			s := b.spec(t, "true")
			s.Env = []string{kv}
			if _, err := Run(context.Background(), s); result.CodeOf(err) != result.InvalidRequest {
				t.Fatalf("Env %q: err %v, want INVALID_REQUEST", kv, err)
			}
		})
	}
	s := b.spec(t, "env")
	s.Env = []string{"LANG=de_DE.UTF-8"}
	b.run(t, s)
	if !strings.Contains(b.stdout.String(), "LANG=de_DE.UTF-8\n") || strings.Contains(b.stdout.String(), "C.UTF-8") {
		t.Fatalf("LANG override not applied: %q", b.stdout.String())
	}
}

func TestHomeIsPrivate(t *testing.T) {
	realHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(realHome, ".netrc"), []byte("machine x password hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", realHome)
	b := newBox(t)
	b.run(t, b.spec(t, "sh", "-c", `echo "$HOME"; cat "$HOME/.netrc"; cat `+filepath.Join(realHome, ".netrc")))
	if strings.TrimSpace(strings.SplitN(b.stdout.String(), "\n", 2)[0]) != b.home {
		t.Fatalf("HOME in the child is %q, want the private %q", b.stdout.String(), b.home)
	}
	if strings.Contains(b.stdout.String(), "hunter2") {
		t.Fatalf("the server user's home was readable: %q", b.stdout.String())
	}
}

func TestStdinIsDevNull(t *testing.T) {
	// Put data on the test process's own stdin, as the MCP stream would be.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup2(int(r.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Dup2(saved, 0); unix.Close(saved); r.Close(); w.Close() })
	if _, err := w.WriteString(`{"jsonrpc":"2.0","method":"secret"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	b := newBox(t)
	out := b.run(t, b.spec(t, "cat"))
	if out.ExitCode != 0 || b.stdout.String() != "" {
		t.Fatalf("cat read %q from stdin (exit %d)", b.stdout.String(), out.ExitCode)
	}
	b2 := newBox(t)
	b2.run(t, b2.spec(t, "readlink", "/proc/self/fd/0"))
	if got := strings.TrimSpace(b2.stdout.String()); got != "/dev/null" {
		t.Fatalf("child stdin is %q, want /dev/null", got)
	}
}

// threadNoNewPrivs counts this process's threads and those with no_new_privs.
func threadNoNewPrivs(t *testing.T) (threads, restricted int) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		st, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		threads++
		if strings.Contains(string(st), "NoNewPrivs:\t1") {
			restricted++
		}
	}
	return threads, restricted
}

func TestServerThreadNotConfinedAfterRun(t *testing.T) {
	before, _ := threadNoNewPrivs(t)
	const runs = 20
	for i := 0; i < runs; i++ {
		b := newBox(t)
		if out := b.run(t, b.spec(t, "true")); out.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, out)
		}
	}
	// A locked thread is torn down just after its goroutine returns, so the
	// last run's thread may take a moment to disappear.
	threads, restricted := threadNoNewPrivs(t)
	// Helpers are reaped in the background once they have answered, each
	// by its (unconfined) launching thread, so those end a little later.
	for deadline := time.Now().Add(5 * time.Second); (restricted != 0 || threads > before+4) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		threads, restricted = threadNoNewPrivs(t)
	}
	if restricted != 0 {
		t.Fatalf("%d of %d server threads still carry no_new_privs after Run", restricted, threads)
	}
	if threads > before+4 {
		t.Fatalf("threads grew from %d to %d over %d runs: the confined threads were not destroyed", before, threads, runs)
	}
	// Every thread the runtime gives us can still write outside any jail,
	// and a plain exec from the server is not confined either.
	outside := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 4*runtime.GOMAXPROCS(0))
	for i := 0; i < cap(errs); i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errs <- os.WriteFile(filepath.Join(outside, fmt.Sprintf("w%d", i)), []byte("x"), 0o600)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("the server could not write outside the jail after Run: %v", err)
		}
	}
	marker := filepath.Join(outside, "plain-exec")
	if err := exec.Command(lookPath(t, "touch"), marker).Run(); err != nil || !exists(marker) {
		t.Fatalf("a plain exec from the server was confined after Run: %v", err)
	}
}

func TestRequiredModeRefusesWithoutLandlock(t *testing.T) {
	// The kernel of the test machine cannot be changed, so the probed ABI
	// is replaced through the package's unexported hook: the refusal path
	// is real, only the kernel's answer is simulated.
	probeHook = func() (int, error) { return 0, nil }
	t.Cleanup(func() { probeHook = nil })

	if _, err := Check(ModeRequired); result.CodeOf(err) != result.PolicyDenied {
		t.Fatalf("Check(required) without Landlock: %v, want POLICY_DENIED", err)
	}
	if _, err := Check(""); result.CodeOf(err) != result.PolicyDenied {
		t.Fatalf("Check(\"\") without Landlock: %v, want POLICY_DENIED (required is the default)", err)
	}
	b := newBox(t)
	marker := filepath.Join(b.jail, "ran")
	_, err := Run(context.Background(), b.spec(t, "touch", marker))
	if result.CodeOf(err) != result.PolicyDenied || exists(marker) {
		t.Fatalf("required mode without Landlock: err %v, ran %v", err, exists(marker))
	}

	s := b.spec(t, "touch", marker)
	s.Landlock = ModeBestEffort
	out := b.run(t, s)
	if !exists(marker) || out.Confinement != "none (best-effort: landlock unavailable)" {
		t.Fatalf("best-effort without Landlock: %+v", out)
	}
	if desc, err := Check(ModeBestEffort); err != nil || !strings.HasPrefix(desc, "none") {
		t.Fatalf("Check(best-effort) = %q, %v", desc, err)
	}

	// Off is unconfined whatever the kernel has, and says so.
	probeHook = nil
	outside := filepath.Join(t.TempDir(), "off-mode")
	s = b.spec(t, "touch", outside)
	s.Landlock = ModeOff
	if out := b.run(t, s); out.Confinement != "none (landlock off)" || !exists(outside) {
		t.Fatalf("off mode: %+v", out)
	}
}

func TestNetworkDenialHoldsWithoutNetABI(t *testing.T) {
	// Simulated ABI 3 (no Landlock TCP rules): the network stays denied,
	// by the network namespace or, with landlock isolation, by the
	// seccomp filter's refusal of every socket.
	probeHook = func() (int, error) { return 3, nil }
	t.Cleanup(func() { probeHook = nil })
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			port, stop := listen(t)
			s := b.spec(t, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port))
			s.Isolation = iso
			out := b.run(t, s)
			if connected := stop(); connected || out.ExitCode == 0 {
				t.Fatalf("%s at ABI 3: the child connected to a loopback listener", iso)
			}
		})
	}
}

func TestEveryABIStillConfinesWrites(t *testing.T) {
	real, _ := Probe()
	for abi := 1; abi <= real; abi++ {
		probeHook = func() (int, error) { return abi, nil }
		b := newBox(t)
		outside := filepath.Join(t.TempDir(), "escaped")
		inside := filepath.Join(b.jail, "inside")
		s := b.spec(t, "touch", inside, outside)
		s.Landlock = ModeBestEffort
		out := b.run(t, s)
		if exists(outside) || !exists(inside) {
			t.Fatalf("ABI %d: outside written %v, inside written %v (%+v, %q)", abi, exists(outside), exists(inside), out, b.stderr.String())
		}
	}
	probeHook = nil
}

func TestTimeoutReportsTimeoutCode(t *testing.T) {
	b := newBox(t)
	s := b.spec(t, "sleep", "30")
	s.Timeout = 200 * time.Millisecond
	out, err := Run(context.Background(), s)
	var re *result.Error
	if !errors.As(err, &re) || re.Code != result.Timeout {
		t.Fatalf("err = %v, want a TIMEOUT *result.Error", err)
	}
	if !out.TimedOut || out.Signal != "SIGKILL" || out.ExitCode != -1 || out.Duration < 200*time.Millisecond || out.Duration > 3*time.Second {
		t.Fatalf("outcome %+v", out)
	}
	if out.Confinement == "" {
		t.Fatalf("the outcome of a timed-out run lost its confinement")
	}
}

func TestContextDeadlineIsATimeoutAndCancelIsNot(t *testing.T) {
	b := newBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	out, err := Run(ctx, b.spec(t, "sleep", "30"))
	if result.CodeOf(err) != result.Timeout || !out.TimedOut {
		t.Fatalf("deadline: %+v %v", out, err)
	}
	// Cancelled once the command runs (a helper started under the race
	// detector on a loaded machine can take longer than a fixed delay).
	ctx2, cancel2 := context.WithCancel(context.Background())
	s := b.spec(t, "sleep", "30")
	s.Started = func() { time.AfterFunc(150*time.Millisecond, cancel2) }
	out, err = Run(ctx2, s)
	if result.CodeOf(err) != result.OperationFailed || out.TimedOut || out.Signal != "SIGKILL" {
		t.Fatalf("cancel: %+v %v", out, err)
	}
}

func TestExitCodeAndOutputAreReported(t *testing.T) {
	b := newBox(t)
	out := b.run(t, b.spec(t, "sh", "-c", "echo out; echo err >&2; exit 7"))
	if out.ExitCode != 7 || out.Signal != "" || b.stdout.String() != "out\n" || b.stderr.String() != "err\n" {
		t.Fatalf("outcome %+v stdout %q stderr %q", out, b.stdout.String(), b.stderr.String())
	}
}

// failingWriter fails every write, like a capping writer that gave up.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("full") }

func TestFailingWriterDoesNotBlockChild(t *testing.T) {
	b := newBox(t)
	// 4 MiB of output: far more than a pipe buffer holds.
	s := b.spec(t, "head", "-c", "4194304", "/dev/zero")
	s.Stdout = failingWriter{}
	s.Timeout = 10 * time.Second
	out := b.run(t, s)
	if out.ExitCode != 0 || out.TimedOut {
		t.Fatalf("the child blocked on a pipe nobody read: %+v", out)
	}
}

func TestMalformedSpecRunsNothing(t *testing.T) {
	b := newBox(t)
	cases := map[string]func(*Spec){
		"relative executable": func(s *Spec) { s.Path = "touch" },
		"empty argv":          func(s *Spec) { s.Argv = nil },
		"cwd outside jail":    func(s *Spec) { s.Dir = filepath.Dir(b.jail) },
		"missing temp dir":    func(s *Spec) { s.TempDir = filepath.Join(b.jail, "nope") },
		"unknown mode":        func(s *Spec) { s.Landlock = "sometimes" },
		"empty PATH":          func(s *Spec) { s.PathEnv = "" },
		"NUL in argument":     func(s *Spec) { s.Argv = append(s.Argv, "a\x00b") },
	}
	marker := filepath.Join(b.jail, "ran")
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s := b.spec(t, "touch", marker)
			mutate(&s)
			if _, err := Run(context.Background(), s); err == nil || exists(marker) {
				t.Fatalf("%s: err %v, ran %v", name, err, exists(marker))
			}
		})
	}
	s := b.spec(t, "touch", marker)
	s.Dir = filepath.Dir(b.jail)
	if _, err := Run(context.Background(), s); result.CodeOf(err) != result.PathEscape {
		t.Fatalf("cwd outside the jail: %v, want PATH_ESCAPE", err)
	}
}

func TestMissingExecutableIsNotFound(t *testing.T) {
	b := newBox(t)
	s := b.spec(t, "true")
	s.Path = filepath.Join(filepath.Dir(s.Path), "bastion-no-such-program")
	if _, err := Run(context.Background(), s); result.CodeOf(err) != result.NotFound {
		t.Fatalf("err %v, want NOT_FOUND", err)
	}
}

func TestAllowlistedToolsWorkUnderLandlock(t *testing.T) {
	// The shipped example policy's allowlist, each run once inside a jail
	// under required Landlock with the default read paths.
	base := newBox(t)
	f := filepath.Join(base.jail, "f.txt")
	if err := os.WriteFile(f, []byte("b\na\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := [][]string{
		{"ls", "-la", "."}, {"cat", "f.txt"}, {"echo", "hi"}, {"pwd"}, {"head", "-n1", "f.txt"},
		{"tail", "-n1", "f.txt"}, {"wc", "-l", "f.txt"}, {"grep", "-n", "a", "f.txt"}, {"sort", "f.txt"},
		{"find", ".", "-name", "*.txt"}, {"tar", "cf", "a.tar", "f.txt"}, {"touch", "new"},
		{"mkdir", "-p", "d/e"}, {"cp", "f.txt", "g.txt"}, {"mv", "g.txt", "h.txt"},
		{"diff", "f.txt", "f.txt"}, {"stat", "f.txt"}, {"date"}, {"id"},
		{"git", "init", "-q", "repo"}, {"git", "-C", "repo", "status", "--short"},
	}
	for _, argv := range cases {
		t.Run(strings.Join(argv, " "), func(t *testing.T) {
			base.stdout, base.stderr = testfs.SyncBuffer{}, testfs.SyncBuffer{}
			out := base.run(t, base.spec(t, argv...))
			if out.ExitCode != 0 {
				t.Errorf("%q failed under the sandbox: exit %d, stderr %q", argv, out.ExitCode, base.stderr.String())
			}
		})
	}
}

func TestChildDiesWithServer(t *testing.T) {
	b := newBox(t)
	tok := token(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), "BASTION_SANDBOX_HELPER=server", "BASTION_SANDBOX_JAIL="+b.jail,
		"BASTION_SANDBOX_TMP="+b.tmp, "BASTION_SANDBOX_HOME="+b.home, "BASTION_SANDBOX_TOKEN="+tok)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	readPid(t, filepath.Join(b.jail, "child.pid"))
	// The command must still be alive while the server lives: the thread
	// that started the helper has not ended early.
	time.Sleep(200 * time.Millisecond)
	if !hostAlive(tok) {
		t.Fatalf("the command died while the server was alive")
	}
	helper.Process.Kill()
	helper.Wait()
	if p := survivors(tok); len(p) > 0 {
		t.Fatalf("processes %v survived the server's death", p)
	}
}

// hostAlive reports whether a live process carries tok.
func hostAlive(tok string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cl, []byte(tok)) {
			if pid, err := strconv.Atoi(e.Name()); err == nil && !processGone(pid) {
				return true
			}
		}
	}
	return false
}

func TestConcurrentRunCannotWriteAnotherRunsJail(t *testing.T) {
	// Eight runs at once, each trying to write into its own jail and into
	// the next run's jail: every domain is per run, never shared.
	const n = 8
	boxes := make([]*box, n)
	for i := range boxes {
		boxes[i] = newBox(t)
	}
	var wg sync.WaitGroup
	for i := range boxes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, other := boxes[i], boxes[(i+1)%n]
			s := b.spec(t, "touch", filepath.Join(b.jail, "mine"), filepath.Join(other.jail, fmt.Sprintf("from-%d", i)))
			if _, err := Run(context.Background(), s); err != nil {
				t.Errorf("run %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	for i, b := range boxes {
		if !exists(filepath.Join(b.jail, "mine")) {
			t.Errorf("run %d could not write its own jail", i)
		}
		if entries, _ := os.ReadDir(b.jail); len(entries) != 1 {
			t.Errorf("jail %d holds %d entries: another run wrote into it", i, len(entries))
		}
	}
}

// TestAttackDeepProcessChainIsCounted builds a chain of processes deeper
// than any fixed walk of parent links, then forks many more at its end:
// the watchdog counts them all, in both isolations.
func TestAttackDeepProcessChainIsCounted(t *testing.T) {
	script := "import os, time\n" +
		"def chain(d):\n" +
		"    if d == 0:\n" +
		"        for i in range(200):\n" +
		"            if os.fork() == 0:\n" +
		"                time.sleep(30); os._exit(0)\n" +
		"        print('all-forked', flush=True)\n" +
		"        time.sleep(30); return\n" +
		"    if os.fork() == 0:\n" +
		"        chain(d - 1); os._exit(0)\n" +
		"    os.wait()\n" +
		"chain(100)\n"
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			s := b.spec(t, "python3", "-c", script)
			s.Isolation = iso
			s.Limits = Limits{MaxProcesses: 64, MemoryMB: 8192}
			s.Timeout = 20 * time.Second
			out, err := Run(context.Background(), s)
			// Either the watchdog stopped it and named the limit, or (an
			// unprivileged server with namespaces) RLIMIT_NPROC refused the
			// forks and the chain never got its processes.
			stopped := result.CodeOf(err) == result.LimitExceeded && out.Limit == LimitProcesses
			refused := !strings.Contains(b.stdout.String(), "all-forked") && out.PeakTasks <= s.Limits.MaxProcesses+nprocSlack
			if !stopped && !refused {
				t.Fatalf("%s: a 100-deep chain with 200 processes at its end: %+v, %v, stdout %q", iso, out, err, b.stdout.String())
			}
		})
	}
}

// TestAttackInodeFlagsOutsideJail tries chattr's ioctl on a file in a
// read path (the server's own file, as /usr is a root server's): with
// landlock isolation it is refused; with namespaces the read path is a
// read-only mount.
func TestAttackInodeFlagsOutsideJail(t *testing.T) {
	ro := t.TempDir()
	victim := filepath.Join(ro, "victim")
	if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			s := b.spec(t, "chattr", "+d", victim)
			s.ReadPaths = append([]string{ro}, DefaultReadPaths...)
			s.Isolation = iso
			b.run(t, s)
			out, err := exec.Command("lsattr", "-d", victim).CombinedOutput()
			if err != nil {
				t.Fatalf("lsattr: %v %s", err, out)
			}
			if flags, _, _ := strings.Cut(string(out), " "); strings.Contains(flags, "d") {
				t.Fatalf("%s: the command set an inode flag on a file outside the jail: %s", iso, out)
			}
		})
	}
}

// TestCommandHoldsNoCapabilities reads the command's own status: every
// capability set is empty (the server runs as root here), no_new_privs is
// set and a seccomp filter is in force, in both isolations (also run by
// the unprivileged pass, TestAttacksUnprivileged).
func TestCommandHoldsNoCapabilities(t *testing.T) {
	for _, iso := range []Isolation{IsolationNamespaces, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			b := newBox(t)
			s := b.spec(t, "cat", "/proc/self/status")
			s.Isolation = iso
			if iso == IsolationLandlock {
				// /proc is not a read path in the host's namespaces; the
				// test reads it for this check only.
				s.ReadPaths = append([]string{"/proc"}, DefaultReadPaths...)
			}
			if out := b.run(t, s); out.ExitCode != 0 {
				t.Fatalf("%s: cat /proc/self/status: %+v %q", iso, out, b.stderr.String())
			}
			st := b.stdout.String()
			want := []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
				"CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"}
			// The bounding set is cleared wherever the helper may clear it: in
			// its user namespace, or as root. An unprivileged server in the
			// host's namespaces cannot (no CAP_SETPCAP); no_new_privs makes the
			// set unusable there, since nothing can be gained from it by exec.
			if iso == IsolationNamespaces || os.Getuid() == 0 {
				want = append(want, "CapBnd:\t0000000000000000")
			}
			for _, want := range want {
				if !strings.Contains(st, want) {
					t.Errorf("%s: the command's status lacks %q:\n%s", iso, want, st)
				}
			}
		})
	}
}

// TestRunsDirOfADeadServerIsRemoved: the runs directory of a server that
// is gone (its lock free) is removed with what its commands left; that of a
// live server (its lock held) is kept; release removes one's own.
func TestRunsDirOfADeadServerIsRemoved(t *testing.T) {
	base := t.TempDir()
	dead := filepath.Join(base, "i-dead")
	if err := os.MkdirAll(filepath.Join(dead, "r-1", "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "r-1", "home", "left"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, runsLock), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	live, releaseLive, err := ClaimRunsDir(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists(dead) {
		t.Fatalf("the runs directory of a dead server was kept")
	}
	mine, release, err := ClaimRunsDir(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !exists(live) {
		t.Fatalf("a live server's runs directory was removed by another's claim")
	}
	release()
	if exists(mine) {
		t.Fatalf("release left the claimed directory")
	}
	releaseLive()
}
