package sandbox

// Helpers of the boundary tests (boundary_linux_test.go): the attack
// programs, the host-side listeners and canaries that prove an attack
// failed, the process-table scan that proves nothing survived, and the
// "server" mode of the test binary.
//
// Every attack is arbitrary code started inside the sandbox through an
// allowed program: a Python or shell script written into the jail (as an
// agent's file-edit tool would) and run as `python3 attack.py CMD ARGS` or
// `sh attack.sh ARGS`. The proofs are taken on the host, never from what the
// script says about itself; the script's own report is only there to make a
// failure readable.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

const (
	// boundaryModeEnv turns the test binary into a "server" that calls Run
	// once (see init below).
	boundaryModeEnv = "BASTION_BOUNDARY_MODE"
	// boundarySpecEnv carries the JSON Spec the server runs.
	boundarySpecEnv = "BASTION_BOUNDARY_SPEC"
	// boundaryUnprivEnv marks the unprivileged pass of the suite (the test
	// binary re-executed as uid 65534), so that it does not recurse.
	boundaryUnprivEnv = "BASTION_BOUNDARY_UNPRIVILEGED"
	// bndPATH is the scrubbed PATH the attacks get.
	bndPATH = "/usr/local/bin:/usr/bin:/bin"
	// bndServerPid is replaced in the server's argv by the server's pid.
	bndServerPid = "{SERVERPID}"
)

// init makes the test binary a server when boundaryModeEnv says so: it runs
// the Spec in boundarySpecEnv through Run, prints a bndServeResult as JSON
// on stdout and exits. It runs before TestMain (and never in the sandbox
// helper, whose environment is helperEnv alone).
func init() {
	if os.Getenv(boundaryModeEnv) == "serve" {
		os.Exit(bndServe())
	}
}

// bndServeResult is what a server subprocess reports.
type bndServeResult struct {
	Outcome        Outcome
	Code           string
	Err            string
	Stdout, Stderr string
}

func bndServe() int {
	var s Spec
	if err := json.Unmarshal([]byte(os.Getenv(boundarySpecEnv)), &s); err != nil {
		fmt.Fprintln(os.Stderr, "boundary server: bad spec:", err)
		return 2
	}
	pid := strconv.Itoa(os.Getpid())
	for i := range s.Argv {
		s.Argv[i] = strings.ReplaceAll(s.Argv[i], bndServerPid, pid)
	}
	var stdout, stderr bndBuffer
	s.Stdout, s.Stderr = &stdout, &stderr
	out, err := Run(context.Background(), s)
	r := bndServeResult{Outcome: out, Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		r.Code, r.Err = string(result.CodeOf(err)), err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 2
	}
	return 0
}

// bndServer is a server subprocess: the test binary in serve mode.
type bndServer struct {
	cmd *exec.Cmd
	out *os.File
}

// bndStartServer starts a server subprocess running s, with extra environment
// variables (the server's own environment, which the command must not see).
// Its output goes to a file, so that waiting for it never depends on pipes
// a stray process could hold.
func bndStartServer(t *testing.T, s Spec, env ...string) *bndServer {
	t.Helper()
	s.Stdout, s.Stderr = nil, nil
	spec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "server-out")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), boundaryModeEnv+"=serve", boundarySpecEnv+"="+string(spec)), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &bndServer{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		out.Close()
	})
	return srv
}

// wait waits for the server and decodes its report.
func (srv *bndServer) wait(t *testing.T) bndServeResult {
	t.Helper()
	_ = srv.cmd.Wait()
	raw, _ := os.ReadFile(srv.out.Name())
	var r bndServeResult
	i := bytes.LastIndex(raw, []byte("\n{"))
	if i < 0 {
		i = -1
	}
	if err := json.Unmarshal(raw[i+1:], &r); err != nil {
		t.Fatalf("the server did not report (%v): %s", err, raw)
	}
	return r
}

// bndBuffer is a bytes.Buffer safe for the drain goroutines and the test.
type bndBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *bndBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *bndBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bndIsolations are the two isolations every attack runs in.
var bndIsolations = []Isolation{IsolationNamespaces, IsolationLandlock}

// bndEachIsolation runs fn as a parallel subtest per isolation.
func bndEachIsolation(t *testing.T, fn func(t *testing.T, iso Isolation)) {
	t.Helper()
	for _, iso := range bndIsolations {
		t.Run(string(iso), func(t *testing.T) {
			t.Parallel()
			fn(t, iso)
		})
	}
}

// bndBox is one attack's sandbox: a jail, private TMPDIR and HOME, and a
// directory outside all of them that stands for the rest of the machine.
type bndBox struct {
	iso                   Isolation
	jail, tmp, home, away string
	stdout, stderr        bndBuffer
}

func newBndBox(t *testing.T, iso Isolation) *bndBox {
	t.Helper()
	base := t.TempDir()
	b := &bndBox{iso: iso, jail: filepath.Join(base, "jail"), tmp: filepath.Join(base, "tmp"),
		home: filepath.Join(base, "home"), away: t.TempDir()}
	for _, d := range []string{b.jail, b.tmp, b.home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// bndProgram resolves an allowed program the way the policy layer would.
func bndProgram(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(bndPATH) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s is not installed; the boundary tests need it", name)
	return ""
}

// spec runs argv (argv[0] resolved through bndPATH) in the box's jail, with
// required Landlock, denied network, the box's isolation, default limits
// and a 20 s backstop.
func (b *bndBox) spec(t testing.TB, argv ...string) Spec {
	t.Helper()
	return Spec{
		Path: bndProgram(t, argv[0]), Argv: argv, Dir: b.jail,
		JailRoot: b.jail, TempDir: b.tmp, HomeDir: b.home,
		PathEnv: bndPATH, Landlock: ModeRequired, Isolation: b.iso,
		Timeout: 20 * time.Second, Stdout: &b.stdout, Stderr: &b.stderr,
	}
}

// py writes the attack program into the jail (as an agent's file edit
// would) and returns the Spec of `python3 attack.py cmd args...`.
func (b *bndBox) py(t testing.TB, cmd string, args ...string) Spec {
	t.Helper()
	b.write(t, "attack.py", attackPy)
	return b.spec(t, append([]string{"python3", "attack.py", cmd}, args...)...)
}

// sh writes script into the jail as attack.sh and returns the Spec of
// `sh attack.sh args...`.
func (b *bndBox) sh(t testing.TB, script string, args ...string) Spec {
	t.Helper()
	b.write(t, "attack.sh", script)
	return b.spec(t, append([]string{"sh", "attack.sh"}, args...)...)
}

// write puts a file into the jail from the outside (an agent's file edit).
func (b *bndBox) write(t testing.TB, rel, content string) {
	t.Helper()
	p := filepath.Join(b.jail, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// plant makes a symbolic link in the jail from the outside.
func (b *bndBox) plant(t testing.TB, rel, target string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(b.jail, rel)); err != nil {
		t.Fatal(err)
	}
}

// run runs s and fails the test on any error.
func (b *bndBox) run(t testing.TB, s Spec) Outcome {
	t.Helper()
	out, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q) in %s: %v\n%s", s.Argv, b.iso, err, b.transcript())
	}
	return out
}

// transcript is the command's output, for failure messages.
func (b *bndBox) transcript() string {
	return "--- stdout:\n" + b.stdout.String() + "--- stderr:\n" + b.stderr.String()
}

// reset clears the captured output.
func (b *bndBox) reset() {
	b.stdout.mu.Lock()
	b.stdout.b.Reset()
	b.stdout.mu.Unlock()
	b.stderr.mu.Lock()
	b.stderr.b.Reset()
	b.stderr.mu.Unlock()
}

// mustHaveRun fails unless the attack program got to its end: a test
// whose attack never ran proves nothing.
func (b *bndBox) mustHaveRun(t testing.TB, dir, cmd string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "done-"+cmd)); err != nil {
		t.Fatalf("the attack %q did not run to its end, so the test proves nothing\n%s", cmd, b.transcript())
	}
}

// escapes returns the lines of the attack's report that say an attempt
// whose name starts with prefix succeeded.
func (b *bndBox) escapes(prefix string) []string {
	var hits []string
	sc := bufio.NewScanner(strings.NewReader(b.stdout.String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "ok "+prefix) {
			hits = append(hits, sc.Text())
		}
	}
	return hits
}

// bndToken is a token no other process on the machine carries.
func bndToken(what string) string {
	return fmt.Sprintf("bastion-%s-%d-%016x", what, os.Getpid(), rand.Uint64())
}

// bndCanaryFile writes a file whose content is a fresh canary into a new
// directory outside every sandbox tree (a stand-in for ~/.ssh).
func bndCanaryFile(t *testing.T) (path, canary string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".ssh")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	canary = bndToken("canary")
	path = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"+canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, canary
}

// assertNoCanary fails if canary appears in the command's output, in any
// file the command could write (jail, TMPDIR, HOME) or in extra.
func (b *bndBox) assertNoCanary(t *testing.T, canary string, extra ...string) {
	t.Helper()
	if strings.Contains(b.stdout.String(), canary) || strings.Contains(b.stderr.String(), canary) {
		t.Errorf("the canary reached the command's output (%s)\n%s", b.iso, b.transcript())
	}
	for _, e := range extra {
		if strings.Contains(e, canary) {
			t.Errorf("the canary reached the command's output (%s): %q", b.iso, e)
		}
	}
	for _, root := range []string{b.jail, b.tmp, b.home} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(canary)) {
				t.Errorf("the canary was copied into %s (%s)", p, b.iso)
			}
			return nil
		})
	}
}

// bndCounter counts connections or datagrams a host listener received.
type bndCounter struct{ n atomic.Int64 }

func (c *bndCounter) count() int64 {
	// Let an accept or read already under way land.
	time.Sleep(50 * time.Millisecond)
	return c.n.Load()
}

// bndListenStream starts a host listener (tcp, tcp6, unix, unixpacket) that
// counts every connection it accepts.
func bndListenStream(t *testing.T, network, addr string) (net.Listener, *bndCounter) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	c := &bndCounter{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln, c
}

// bndListenPacket starts a host datagram listener (udp, udp6, unixgram) that
// counts every datagram it receives.
func bndListenPacket(t *testing.T, network, addr string) (net.PacketConn, *bndCounter) {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	c := &bndCounter{}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			c.n.Add(1)
		}
	}()
	t.Cleanup(func() { pc.Close() })
	return pc, c
}

// bndProcsWith lists the host's processes whose command line contains token
// (zombies have none, so only live processes are listed).
func bndProcsWith(token string) map[int]string {
	found := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cl, []byte(token)) {
			continue
		}
		found[pid] = string(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}))
	}
	return found
}

// bndWaitGone waits up to within for every process carrying token to be
// gone. It returns those that were not, after killing them: it keeps
// scanning and killing until two scans in a row find nothing, so that a
// process that keeps forking away is caught too.
func bndWaitGone(token string, within time.Duration) map[int]string {
	deadline := time.Now().Add(within)
	for {
		left := bndProcsWith(token)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed := map[int]string{}
	for empty, stop := 0, time.Now().Add(5*time.Second); empty < 2 && time.Now().Before(stop); {
		left := bndProcsWith(token)
		if len(left) == 0 {
			empty++
		} else {
			empty = 0
		}
		for pid, cl := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = cl
		}
		time.Sleep(5 * time.Millisecond)
	}
	return killed
}

// bndAssertNoneSurvive fails if any process carrying token is alive after
// within (SIGKILL is delivered asynchronously); survivors are killed.
func bndAssertNoneSurvive(t *testing.T, token string, within time.Duration, what string) {
	t.Helper()
	if left := bndWaitGone(token, within); len(left) != 0 {
		t.Errorf("%s: %d process(es) of the command survived: %v", what, len(left), left)
	}
}

// bndAwaitFiles waits until every file exists (the attack's own progress
// markers), failing after a while.
func bndAwaitFiles(t *testing.T, within time.Duration, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, p := range paths {
		for {
			if _, err := os.Stat(p); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never appeared: the attack did not get as far as the test needs", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// bndFileState is what "unchanged" means for a file outside the jail.
type bndFileState struct {
	content string
	mode    os.FileMode
	mtime   time.Time
	xattrs  string
}

func bndStateOf(t *testing.T, p string) bndFileState {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return bndFileState{content: "<" + err.Error() + ">"}
	}
	data, _ := os.ReadFile(p)
	buf := make([]byte, 4096)
	n, _ := syscall.Listxattr(p, buf)
	if n < 0 {
		n = 0
	}
	return bndFileState{content: string(data), mode: fi.Mode(), mtime: fi.ModTime(), xattrs: string(buf[:n])}
}

// bndRunGuarded runs s like Run, with a bound: a helper that died can leave
// Run blocked reading a control socket that processes of the command still
// hold. Past bound, the processes carrying token are killed (which lets
// Run return) and the hang is reported.
func bndRunGuarded(t *testing.T, s Spec, token string, bound time.Duration) (Outcome, error) {
	t.Helper()
	type res struct {
		out Outcome
		err error
	}
	ch := make(chan res, 1)
	go func() {
		out, err := Run(context.Background(), s)
		ch <- res{out, err}
	}()
	select {
	case r := <-ch:
		return r.out, r.err
	case <-time.After(bound):
	}
	left := bndWaitGone(token, 0)
	t.Errorf("%s: Run had not returned %v after it was called; killed the command's remaining processes %v",
		s.Isolation, bound, left)
	select {
	case r := <-ch:
		return r.out, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Run still had not returned 10 s after the command's processes were killed", s.Isolation)
	}
	return Outcome{}, nil
}

// bndLimitCheck asserts that a limit stopped the command and was named.
func bndLimitCheck(t *testing.T, b *bndBox, out Outcome, err error, limit string) {
	t.Helper()
	var re *result.Error
	if !errors.As(err, &re) || re.Code != result.LimitExceeded || out.Limit != limit {
		t.Errorf("%s: want LIMIT_EXCEEDED with limit %q; got err %v, outcome %+v\n%s",
			b.iso, limit, err, out, b.transcript())
		return
	}
	t.Logf("%s: stopped as %s: %v (peak tasks %d, peak rss %d KiB, cpu %v)", b.iso, out.Limit, err, out.PeakTasks, out.PeakRSSKB, out.CPUTime)
}

// bndStillServes runs an ordinary command right after an attack: the server
// keeps serving.
func bndStillServes(t *testing.T, b *bndBox) {
	t.Helper()
	b.reset()
	s := b.spec(t, "sh", "-c", "echo still-serving")
	s.Timeout = 10 * time.Second
	out, err := Run(context.Background(), s)
	if err != nil || out.ExitCode != 0 || b.stdout.String() != "still-serving\n" {
		t.Errorf("%s: the next command after the attack failed: %v %+v\n%s", b.iso, err, out, b.transcript())
	}
}

// attackPy is the attack program. `python3 attack.py CMD ARGS...` tries
// every way it knows of doing CMD, prints "ok WHAT" or "refused WHAT - WHY"
// for each attempt, and writes done-CMD in its working directory when it
// got to its end.
const attackPy = `
import ctypes, errno, os, platform, shutil, signal, socket, sys, time

def say(*a):
    sys.stdout.write(" ".join(str(x) for x in a).replace("\n", "\\n") + "\n")
    sys.stdout.flush()

def attempt(what, fn):
    try:
        r = fn()
    except BaseException as e:
        say("refused", what, "-", type(e).__name__, e)
        return None
    say("ok", what)
    return True if r is None else r

def slurp(p):
    with open(p, "rb") as f:
        return f.read()

def put(p, data=b"evil"):
    with open(p, "wb") as f:
        f.write(data)

def done(tag):
    put("done-" + tag, b"done")

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def check(r):
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r

AMD64 = platform.machine() == "x86_64"
SYS_PIDFD_OPEN, SYS_PIDFD_SEND_SIGNAL = 434, 424
SYS_PROCESS_VM_READV = 310 if AMD64 else 270

# ---- writing outside the jail -------------------------------------------

def cmd_write(outside, victim, rovictim, hosttmp):
    created = os.path.join(outside, "created")
    attempt("write create", lambda: put(created))
    attempt("write overwrite", lambda: put(victim))
    attempt("write append", lambda: open(victim, "ab").write(b"evil"))
    attempt("write truncate", lambda: os.truncate(victim, 0))
    attempt("write unlink", lambda: os.unlink(victim))
    attempt("write mkdir", lambda: os.mkdir(os.path.join(outside, "dir")))
    attempt("write symlink-outside", lambda: os.symlink("x", os.path.join(outside, "sym")))
    attempt("write mkfifo-outside", lambda: os.mkfifo(os.path.join(outside, "fifo")))
    attempt("write read-path-file", lambda: put(rovictim))
    attempt("write read-path-create", lambda: put(os.path.join(os.path.dirname(rovictim), "created")))
    attempt("write host-tmp", lambda: put(hosttmp))
    rel = os.path.relpath(created)
    attempt("write dotdot " + rel, lambda: put(rel))
    attempt("write proc-self-root", lambda: put("/proc/self/root" + created))
    put("evil")
    attempt("write rename-over-victim", lambda: os.rename("evil", victim))
    attempt("write rename-to-outside", lambda: os.rename("evil", created))
    attempt("write rename-victim-into-jail", lambda: os.rename(victim, "stolen"))
    attempt("write renameat2-exchange", lambda: check(libc.renameat2(-100, b"evil", -100, victim.encode(), 2)))
    attempt("write hardlink-victim-into-jail", lambda: os.link(victim, "hardlink"))
    attempt("write through-hardlink", lambda: put("hardlink"))
    attempt("write hardlink-to-outside", lambda: os.link("evil", created))
    attempt("write own-symlink", lambda: os.symlink(victim, "mylink"))
    attempt("write through-own-symlink", lambda: put("mylink"))
    attempt("write through-planted-link", lambda: put("planted-link"))
    attempt("write append-planted-link", lambda: open("planted-link", "ab").write(b"evil"))
    attempt("write create-in-planted-dir", lambda: put("planted-dir/created"))
    attempt("write rename-into-planted-dir", lambda: os.rename("evil", "planted-dir/renamed"))
    done("write")

def cmd_meta(victim):
    attempt("meta chmod", lambda: os.chmod(victim, 0o777))
    attempt("meta utime", lambda: os.utime(victim, (0, 0)))
    attempt("meta setxattr", lambda: os.setxattr(victim, "user.evil", b"evil"))
    def fch():
        fd = os.open(victim, os.O_RDONLY)
        os.fchmod(fd, 0o777)
    attempt("meta fchmod-read-only-fd", fch)
    done("meta")

# ---- reading outside the jail -------------------------------------------

def cmd_read(canary):
    canarydir = os.path.dirname(canary)
    loot = []
    def grab(what, fn):
        r = attempt("read " + what, fn)
        if isinstance(r, (bytes, str)):
            loot.append(r if isinstance(r, bytes) else r.encode())
    grab("open", lambda: slurp(canary))
    grab("listdir", lambda: " ".join(os.listdir(canarydir)))
    grab("dotdot", lambda: slurp(os.path.relpath(canary)))
    grab("proc-self-root", lambda: slurp("/proc/self/root" + canary))
    grab("proc-1-root", lambda: slurp("/proc/1/root" + canary))
    grab("proc-ppid-root", lambda: slurp("/proc/%d/root%s" % (os.getppid(), canary)))
    grab("planted-link", lambda: slurp("planted-canary"))
    grab("planted-dir", lambda: slurp("planted-dir/" + os.path.basename(canary)))
    grab("own-symlink", lambda: (os.symlink(canary, "mylink"), slurp("mylink"))[1])
    grab("hardlink", lambda: (os.link(canary, "hardlink"), slurp("hardlink"))[1])
    grab("copy", lambda: (shutil.copyfile(canary, "copied"), slurp("copied"))[1])
    grab("o-path", lambda: slurp("/proc/self/fd/%d" % os.open(canary, os.O_PATH)))
    for i, d in enumerate(loot):
        put("loot-%d" % i, d)
        say("LOOT", d)
    done("read")

# ---- sockets ------------------------------------------------------------

UNIX_TYPES = (("stream", socket.SOCK_STREAM), ("seqpacket", socket.SOCK_SEQPACKET))

def unix_all(label, addr):
    for name, typ in UNIX_TYPES:
        def f(typ=typ):
            s = socket.socket(socket.AF_UNIX, typ)
            s.settimeout(2)
            s.connect(addr)
            s.send(b"hello")
            s.close()
        attempt("%s %s %r" % (label, name, addr), f)
    def g():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for _ in range(3):
            s.sendto(b"hello", addr)
    attempt("%s dgram %r" % (label, addr), g)

def cmd_unix(*paths):
    for p in paths:
        unix_all("unix", p)
    done("unix")

def cmd_abstract(*names):
    for n in names:
        unix_all("abstract", "\0" + n)
    done("abstract")

def hostport(hp):
    host, port = hp.rsplit(":", 1)
    host = host.strip("[]")
    return (socket.AF_INET6 if ":" in host else socket.AF_INET), host, int(port)

def cmd_tcp(*hps):
    for hp in hps:
        fam, host, port = hostport(hp)
        for name, proto in (("tcp", 0), ("mptcp", 262)):
            def f(proto=proto):
                s = socket.socket(fam, socket.SOCK_STREAM, proto)
                s.settimeout(2)
                s.connect((host, port))
                s.send(b"hello")
                s.close()
            attempt("%s %s" % (name, hp), f)
    done("tcp")

def cmd_udp(*hps):
    for hp in hps:
        fam, host, port = hostport(hp)
        def f():
            s = socket.socket(fam, socket.SOCK_DGRAM)
            for _ in range(3):
                s.sendto(b"hello", (host, port))
        attempt("udp sendto %s" % hp, f)
        def g():
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.connect((host, port))
            for _ in range(3):
                s.send(b"hello")
        attempt("udp connected %s" % hp, g)
    done("udp")

def cmd_raw():
    attempt("raw inet icmp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
    attempt("raw inet tcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP))
    attempt("raw inet udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP))
    attempt("raw inet6 icmpv6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, 58))
    attempt("raw packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)))
    attempt("raw packet-dgram", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(3)))
    done("raw")

# ---- other processes ----------------------------------------------------

def cmd_proc(*pids):
    for pid in pids:
        for f in ("environ", "cmdline", "status", "maps", "stat", "auxv", "mem"):
            p = "/proc/%s/%s" % (pid, f)
            d = attempt("proc read %s" % p, lambda p=p: slurp(p)[:65536])
            if isinstance(d, bytes):
                say("CONTENT", p, d)
                put("loot-%s-%s" % (pid, f), d)
        for f in ("root", "cwd", "fd", "map_files", "task"):
            p = "/proc/%s/%s" % (pid, f)
            d = attempt("proc list %s" % p, lambda p=p: os.listdir(p))
            if d:
                say("CONTENT", p, d)
    # Everything /proc shows.
    try:
        every = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError as e:
        every = []
        say("refused proc-listdir -", e)
    say("PIDS", " ".join(every))
    for e in every:
        try:
            d = slurp("/proc/%s/environ" % e)
            say("ENV", e, d)
            put("loot-env-%s" % e, d)
        except OSError:
            pass
    done("proc")

def cmd_signal(pid, pgid):
    pid, pgid = int(pid), int(pgid)
    for sig in (0, signal.SIGUSR1, signal.SIGTERM, signal.SIGHUP):
        attempt("signal kill %d" % sig, lambda sig=sig: os.kill(pid, sig))
    attempt("signal killpg", lambda: os.killpg(pgid, signal.SIGUSR1))
    attempt("signal sigqueue", lambda: check(libc.sigqueue(pid, int(signal.SIGUSR1), 0)))
    def pidfd():
        fd = check(libc.syscall(SYS_PIDFD_OPEN, pid, 0))
        check(libc.syscall(SYS_PIDFD_SEND_SIGNAL, fd, int(signal.SIGUSR1), None, 0))
    attempt("signal pidfd", pidfd)
    def sigio():
        r, w = os.pipe()
        import fcntl
        fcntl.fcntl(r, 10, int(signal.SIGUSR1))  # F_SETSIG
        fcntl.fcntl(r, fcntl.F_SETOWN, pid)
        fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
        os.write(w, b"x")
        time.sleep(0.1)
    # Arming it may succeed; the proof is whether the signal arrives.
    attempt("arm sigio-fsetown", sigio)
    for name, req in (("attach", 16), ("seize", 0x4206)):
        attempt("signal ptrace-" + name, lambda req=req: check(libc.ptrace(req, pid, None, None)))
    def vmread():
        buf = ctypes.create_string_buffer(16)
        class iovec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        local = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
        remote = iovec(0x400000, 16)
        check(libc.syscall(SYS_PROCESS_VM_READV, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    attempt("signal process_vm_readv", vmread)
    done("signal")

# ---- processes that try to outlive the command ---------------------------

def hold(kind):
    put("alive-" + kind, str(os.getpid()).encode())
    fd = os.open("/dev/null", os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
        signal.signal(s, signal.SIG_IGN)
    while True:
        time.sleep(1)

def cmd_daemon(mode, token=""):
    if os.fork() == 0:
        os.setsid()
        hold("setsid")
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                hold("double")
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    if os.fork() == 0:
        # A runner: forks away from its parent for ever, in a new session
        # each time.
        os.setsid()
        put("alive-runner", b"")
        fd = os.open("/dev/null", os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(fd, i)
        while True:
            if os.fork() != 0:
                os._exit(0)
            try:
                os.setsid()
            except OSError:
                pass
            time.sleep(0.01)
    for _ in range(500):
        if all(os.path.exists("alive-" + k) for k in ("setsid", "double", "runner")):
            break
        time.sleep(0.01)
    done("daemon")
    if mode == "exit":
        os._exit(0)
    while True:
        time.sleep(1)

def cmd_sleep(token=""):
    done("sleep")
    while True:
        time.sleep(1)

# ---- resource hogs ------------------------------------------------------

def cmd_bomb(cap, token=""):
    # A fork bomb that does not give up when fork fails, bounded by cap so
    # that a sandbox that does not stop it cannot take the machine down.
    n = 0
    while n < int(cap):
        try:
            pid = os.fork()
        except OSError:
            time.sleep(0.005)
            continue
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
    say("bomb reached", n)
    time.sleep(30)

def cmd_hog(cap_mb, *token):
    chunks = []
    for i in range(int(cap_mb) // 8):
        chunks.append(b"\x01" * (8 << 20))
        # Gradual (160 MiB/s), as a real build grows, so that a watchdog
        # polling every few tens of milliseconds sees it.
        time.sleep(0.05)
    say("hog held", len(chunks) * 8, "MiB")
    done("hog")

def cmd_memfd(cap_mb, *token):
    # Memory that no process maps: it is in no process's resident set.
    fds = []
    chunk = b"\x01" * (1 << 20)
    for i in range(int(cap_mb) // 2):
        fd = os.memfd_create("hog%d" % i)
        for _ in range(2):
            os.write(fd, chunk)
        fds.append(fd)
        time.sleep(0.002)
    say("memfd held", len(fds) * 2, "MiB")
    done("memfd")

def cmd_sockhold(workers, cap_mb, *token):
    # Socket-pair buffers, both ways: kernel memory in no resident set.
    # Each worker reports "held W MiB" as it goes.
    workers, cap = int(workers), (int(cap_mb) << 20) // int(workers)
    kids = []
    for w in range(workers):
        pid = os.fork()
        if pid:
            kids.append(pid)
            continue
        held, last, pairs = 0, 0, []
        chunk = b"\x01" * 65536
        while held < cap:
            try:
                pair = socket.socketpair()
            except OSError as e:
                say("sockhold stopped", e)
                break
            pairs.append(pair)
            for s in pair:
                s.setblocking(False)
                while held < cap:
                    try:
                        held += s.send(chunk)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as e:
                        say("sockhold send", e)
                        time.sleep(0.05)
                        break
            if held - last >= (2 << 20):
                say("held", w, held >> 20)
                last = held
                time.sleep(0.01)
        say("held", w, held >> 20)
        time.sleep(3)
        os._exit(0)
    for pid in kids:
        os.waitpid(pid, 0)
    done("sockhold")

def cmd_pipehold(workers, cap_mb, *token):
    # Pipe buffers, enlarged where the kernel lets them be: kernel memory in
    # no resident set. Each worker reports "held W MiB" as it goes.
    import fcntl
    workers, cap = int(workers), (int(cap_mb) << 20) // int(workers)
    kids = []
    for w in range(workers):
        pid = os.fork()
        if pid:
            kids.append(pid)
            continue
        held, last, pipes = 0, 0, []
        chunk = b"\x01" * 65536
        while held < cap:
            try:
                r, wr = os.pipe()
            except OSError as e:
                say("pipehold stopped", e)
                break
            pipes.append((r, wr))
            try:
                fcntl.fcntl(wr, 1031, 1 << 20)  # F_SETPIPE_SZ
            except OSError:
                pass
            os.set_blocking(wr, False)
            while held < cap:
                try:
                    held += os.write(wr, chunk)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as e:
                    say("pipehold write", e)
                    break
            if held - last >= (2 << 20):
                say("held", w, held >> 20)
                last = held
                time.sleep(0.01)
        say("held", w, held >> 20)
        time.sleep(3)
        os._exit(0)
    for pid in kids:
        os.waitpid(pid, 0)
    done("pipehold")

def cmd_shmhold(cap_mb, *token):
    # Pages of a tmpfs file: in no resident set until mapped.
    try:
        fd = os.open("/dev/shm/hold", os.O_CREAT | os.O_WRONLY, 0o600)
    except OSError as e:
        say("shmhold refused", e)
        return
    chunk = b"\x01" * (1 << 20)
    for i in range(int(cap_mb)):
        try:
            os.write(fd, chunk)
        except OSError as e:
            say("shmhold write", e)
            break
        if i % 2 == 1:
            say("held", 0, i + 1)
            time.sleep(0.01)
    time.sleep(3)
    done("shmhold")

def cmd_diskhold(files, mb, *token):
    # Many files, each under max_file_mb.
    chunk = b"\x01" * (1 << 20)
    for i in range(int(files)):
        with open("fill%03d" % i, "wb") as f:
            for _ in range(int(mb)):
                f.write(chunk)
                f.flush()
                time.sleep(0.002)
        say("held", 0, (i + 1) * int(mb))
    done("diskhold")

def cmd_diskholdsync(files, mb, *token):
    # As diskhold, each file written to the disk before the next.
    chunk = b"\x01" * (1 << 20)
    for i in range(int(files)):
        with open("fill%03d" % i, "wb") as f:
            for _ in range(int(mb)):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        say("held", 0, (i + 1) * int(mb))
    done("diskholdsync")

def cmd_fill(path, mb, *token):
    with open(path, "wb") as f:
        for _ in range(int(mb)):
            f.write(b"\0" * (1 << 20))
            f.flush()
    done("fill")

def cmd_spin(ignore="", *token):
    if ignore == "ignore":
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    while True:
        pass

def cmd_fds(*token):
    held = []
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))

# ---- set-user-ID files --------------------------------------------------

def cmd_setuid():
    put("f", b"#!/bin/sh\n")
    attempt("setuid chmod-4755", lambda: os.chmod("f", 0o4755))
    attempt("setuid chmod-2755", lambda: os.chmod("f", 0o2755))
    attempt("setuid chmod-6777", lambda: os.chmod("f", 0o6777))
    def fch():
        fd = os.open("f", os.O_RDONLY)
        os.fchmod(fd, 0o4755)
    attempt("setuid fchmod", fch)
    attempt("setuid open-mode", lambda: os.close(os.open("g", os.O_CREAT | os.O_WRONLY, 0o4755)))
    attempt("setuid creat-mode-2", lambda: os.close(os.open("g2", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o2755)))
    attempt("setuid mkdir-2755", lambda: os.mkdir("d", 0o2755))
    attempt("setuid mkdir-then-chmod", lambda: (os.mkdir("d2"), os.chmod("d2", 0o2775)))
    attempt("setuid mknod", lambda: os.mknod("n", 0o104755))
    attempt("setuid fchmodat2", lambda: check(libc.syscall(452, -100, b"f", 0o4755, 0)))
    attempt("setuid hardlink-passwd", lambda: os.link("/usr/bin/passwd", "passwd-link"))
    attempt("setuid copy2-passwd", lambda: shutil.copy2("/usr/bin/passwd", "passwd-copy"))
    attempt("setuid chown-root", lambda: os.chown("f", 0, 0))
    attempt("setuid chown-other", lambda: os.chown("f", 1234, 1234))
    attempt("setuid filecap", lambda: os.setxattr("f", "security.capability",
        bytes([0, 0, 0, 2]) + (1 << 21).to_bytes(4, "little") + bytes(16)))
    done("setuid")

# ---- the git variant: a subset of the above, from a program git runs ------

def cmd_git(outside, victim, canary, sock, tcp):
    cmd_write(outside, victim, victim, os.path.join(outside, "tmp"))
    cmd_read(canary)
    cmd_unix(sock)
    cmd_tcp(tcp)
    done("git")

# ---- the control socket the helper may have left open --------------------

def cmd_forge(fake, stay="", token=""):
    for fd in range(3, 64):
        try:
            os.write(fd, fake.encode())
            say("wrote to fd", fd)
        except OSError:
            pass
    done("forge")
    if stay == "stay":
        time.sleep(8)
    sys.exit(7)

globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
`
