package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
)

// leftoverPy is run twice in one kept helper: `leave TOKEN` leaves behind
// everything a finished command could hope to hand the next one (a
// daemon that escaped its process group, System V and POSIX IPC objects,
// a /dev/shm file, an abstract socket held by the daemon), `look TOKEN`
// reports, one line each, which of them it finds.
const leftoverPy = `
import ctypes, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
cmd, token = sys.argv[1], sys.argv[2]
IPC_CREAT, IPC_PRIVATE = 0o1000, 0
if cmd == "leave":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind("\0" + token)
            s.listen(1)
            s.set_inheritable(True)
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", token])
        os._exit(0)
    os.wait()
    print("msgget", libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600))
    print("semget", libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600))
    libc.mq_open.restype = ctypes.c_int
    print("mq_open", libc.mq_open(("/" + token).encode(), os.O_CREAT | os.O_RDWR, 0o600, None), ctypes.get_errno())
    with open("/dev/shm/" + token, "wb") as f:
        f.write(b"x" * 4096)
    print("pid", os.getpid())
    time.sleep(0.3)  # the daemon binds its socket
    sys.exit(0)
found = []
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) not in (1, os.getpid()):
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                c = f.read()
        except OSError:
            continue
        if token.encode() in c:
            found.append("process " + p)
for f in ("msg", "sem", "shm"):
    with open("/proc/sysvipc/" + f) as fh:
        rows = fh.read().strip().splitlines()[1:]
    if rows:
        found.append("sysv " + f)
libc.mq_open.restype = ctypes.c_int
if libc.mq_open(("/" + token).encode(), os.O_RDONLY) >= 0:
    found.append("mqueue")
if os.listdir("/dev/shm"):
    found.append("/dev/shm " + ",".join(os.listdir("/dev/shm")))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + token)
    found.append("abstract socket")
except OSError:
    pass
print("pid", os.getpid())
print("found", " ".join(found) if found else "nothing")
`

// TestAttackLeftoversNeverReachTheNextCommandInAKeptHelper: a helper serves
// the next command of its pair (reuse_linux.go), so whatever a command
// leaves in the namespaces must be gone before that: a daemon that left
// its process group, System V message queues and semaphores, POSIX message
// queues, /dev/shm files and an abstract socket. Both commands must have
// run in the same helper, or the test proves nothing.
func TestAttackLeftoversNeverReachTheNextCommandInAKeptHelper(t *testing.T) {
	b := newBndBox(t, IsolationNamespaces)
	b.write(t, "left.py", leftoverPy)
	// Tests running beside this one park helpers too, and the oldest
	// parked is ended to make room: a few tries find the two commands in
	// one helper.
	for try := 0; try < 5; try++ {
		b.reset()
		token := bndToken("leftover")
		first := b.run(t, b.spec(t, "python3", "left.py", "leave", token))
		if first.ExitCode != 0 || !strings.Contains(b.stdout.String(), "pid") {
			t.Fatalf("the first command failed: %+v\n%s", first, b.transcript())
		}
		// (POSIX message queues are refused to the command in the first
		// place: Landlock refuses the open of a queue, a file beneath no
		// rule of the ruleset. The helper removes any all the same.)
		for _, k := range []string{"msgget", "semget"} {
			if strings.Contains(b.stdout.String(), k+" -1") {
				t.Fatalf("the first command could not make its %s object, so the test proves nothing\n%s", k, b.transcript())
			}
		}
		b.reset()
		second := b.run(t, b.spec(t, "python3", "left.py", "look", token))
		if second.HelperPID != first.HelperPID {
			t.Logf("try %d: the second command ran in helper %d, not in the first's (%d)", try, second.HelperPID, first.HelperPID)
			continue
		}
		if !strings.Contains(b.stdout.String(), "found nothing") {
			t.Fatalf("the second command found what the first left:\n%s", b.transcript())
		}
		bndAssertNoneSurvive(t, token, 5*time.Second, "the first command's daemon")
		return
	}
	t.Fatal("no two commands ran in one helper in 5 tries: nothing was kept, so the test proves nothing")
}

// TestKeptHelperServesOneCommandAtATime: runs of one pair that overlap
// never share a helper (each takes it out of the parked list), and a
// helper is kept only after a command that ended by itself: not after a
// timeout, a cancellation or a limit.
func TestKeptHelperServesOneCommandAtATime(t *testing.T) {
	b := newBox(t)
	var wg sync.WaitGroup
	type span struct {
		pid        int
		start, end time.Time
	}
	spans := make([]span, 3)
	for i := range spans {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := b.spec(t, "sleep", "0.5")
			s.Stdout, s.Stderr = io.Discard, io.Discard
			s.Started = func() { spans[i].start = time.Now() }
			out, err := Run(context.Background(), s)
			spans[i].end = time.Now()
			if err != nil || out.ExitCode != 0 {
				t.Errorf("run %d: %v %+v", i, err, out)
			}
			spans[i].pid = out.HelperPID
		}(i)
	}
	wg.Wait()
	overlapped := 0
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			a, c := spans[i], spans[j]
			if a.start.Before(c.end) && c.start.Before(a.end) {
				overlapped++
				if a.pid == c.pid {
					t.Fatalf("runs %d and %d overlapped in one helper (%d)", i, j, a.pid)
				}
			}
		}
	}
	if overlapped == 0 {
		t.Fatal("no two runs overlapped, so the test proves nothing")
	}
	// After a timeout the helper is not kept.
	quick := b.spec(t, "true")
	first, err := Run(context.Background(), quick)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), quick)
	if err != nil || again.HelperPID != first.HelperPID {
		t.Fatalf("a command that ended by itself did not leave its helper for the next: %d then %d (%v)",
			first.HelperPID, again.HelperPID, err)
	}
	slow := b.spec(t, "sleep", "10")
	slow.Timeout = 200 * time.Millisecond
	timedOut, _ := Run(context.Background(), slow)
	if !timedOut.TimedOut {
		t.Fatalf("the slow command did not time out: %+v", timedOut)
	}
	after, err := Run(context.Background(), quick)
	if err != nil {
		t.Fatal(err)
	}
	if timedOut.HelperPID != 0 && after.HelperPID == timedOut.HelperPID {
		t.Fatalf("the helper of a command that timed out served the next one (%d)", after.HelperPID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	cancelled, _ := Run(ctx, slow)
	next, err := Run(context.Background(), quick)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.HelperPID != 0 && next.HelperPID == cancelled.HelperPID {
		t.Fatalf("the helper of a cancelled command served the next one (%d)", next.HelperPID)
	}
}

// TestWalkBeneathRefusesWhatOpenat2Would: the confined forker enters the
// working directory by walkBeneath (openat2 is refused on its thread): a
// nested directory opens as itself; "..", a symbolic link at any depth and
// a mount crossed are refused, as RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_XDEV refuse them.
func TestWalkBeneathRefusesWhatOpenat2Would(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(base, "a", "link")); err != nil {
		t.Fatal(err)
	}
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	fd, err := walkBeneath(dir, "a/b/c")
	if err != nil {
		t.Fatalf("a/b/c: %v", err)
	}
	var got, want unix.Stat_t
	_ = unix.Fstat(fd, &got)
	unix.Close(fd)
	_ = unix.Stat(filepath.Join(base, "a", "b", "c"), &want)
	if got.Ino != want.Ino || got.Dev != want.Dev {
		t.Fatal("a/b/c opened another directory")
	}
	for _, rel := range []string{"a/../a", "..", "a/link", "a/link/c"} {
		if fd, err := walkBeneath(dir, rel); err == nil {
			unix.Close(fd)
			t.Errorf("%s: opened, want a refusal", rel)
		}
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	if fd, err := walkBeneath(root, "proc"); err != unix.EXDEV {
		if err == nil {
			unix.Close(fd)
		}
		t.Errorf("/proc, a mount: %v, want EXDEV", err)
	}
}

// TestRunNeverWritesToADescriptorReusedAfterIt: the relay's watcher can
// hear the request's cancellation after Run has returned (an MCP request's
// context ends once its answer is out). It must not write its wake-up to
// the descriptor number it had, which the next file the server opens
// reuses: the audit log got 8 stray bytes that way, found as torn tails.
func TestRunNeverWritesToADescriptorReusedAfterIt(t *testing.T) {
	b := newBox(t)
	s := b.spec(t, "true")
	s.Stdout, s.Stderr = io.Discard, io.Discard
	dir := t.TempDir()
	for i := 0; i < 500; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := Run(ctx, s); err != nil {
			t.Fatal(err)
		}
		cancel()
		var files []*os.File
		for j := 0; j < 6; j++ {
			f, err := os.Create(filepath.Join(dir, "f"+strconv.Itoa(i)+"-"+strconv.Itoa(j)))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		time.Sleep(2 * time.Millisecond)
		for _, f := range files {
			fi, _ := f.Stat()
			f.Close()
			if fi.Size() != 0 {
				t.Fatalf("run %d: %d bytes were written to a file opened after Run returned", i, fi.Size())
			}
		}
	}
}

// TestSysvInUseCountsWhatIsCreated checks clearSysV's shortcut against the
// kernel: the count sysvInUse reads for each kind of System V object goes
// up by one when one is created and back when it is removed (a wrong
// structure index would read another field, and the shortcut would skip a
// namespace that holds objects).
func TestSysvInUseCountsWhatIsCreated(t *testing.T) {
	const ipcPrivate, ipcCreat = 0, 0o1000
	for _, k := range []struct {
		name   string
		nr     uintptr
		cmd    uintptr
		index  int
		create func() (int, unix.Errno)
		remove func(id int)
	}{
		{"message queue", unix.SYS_MSGCTL, ipcMsgInfo, 0, func() (int, unix.Errno) {
			id, _, e := unix.Syscall(unix.SYS_MSGGET, ipcPrivate, ipcCreat|0o600, 0)
			return int(id), e
		}, func(id int) { unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0) }},
		{"semaphore set", unix.SYS_SEMCTL, ipcSemInfo, 7, func() (int, unix.Errno) {
			id, _, e := unix.Syscall(unix.SYS_SEMGET, ipcPrivate, 1, ipcCreat|0o600)
			return int(id), e
		}, func(id int) { unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0) }},
		{"shared memory segment", unix.SYS_SHMCTL, ipcShmInfo, 0, func() (int, unix.Errno) {
			id, err := unix.SysvShmGet(ipcPrivate, 4096, ipcCreat|0o600)
			if err != nil {
				return 0, err.(unix.Errno)
			}
			return id, 0
		}, func(id int) { unix.SysvShmCtl(id, unix.IPC_RMID, nil) }},
	} {
		before, ok := sysvInUse(k.nr, k.cmd, k.index)
		if !ok {
			t.Fatalf("%s: the *_INFO call failed", k.name)
		}
		id, e := k.create()
		if e != 0 {
			t.Fatalf("%s: %v", k.name, e)
		}
		during, _ := sysvInUse(k.nr, k.cmd, k.index)
		k.remove(id)
		after, _ := sysvInUse(k.nr, k.cmd, k.index)
		if during != before+1 || after != before {
			t.Errorf("%s: in use %d, then %d with one more, then %d once removed", k.name, before, during, after)
		}
	}
}

// TestDirIsEmptyReadsAgainFromTheStart checks emptyDirs' shortcut
// (fsx.DirEmptyAt) on one
// kept descriptor, as a kept helper uses it between commands: an entry
// made after an earlier read is seen (the read starts again from the
// start), long names and more entries than one read's buffer holds too,
// and once they are removed the directory is empty again.
func TestDirIsEmptyReadsAgainFromTheStart(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if !fsx.DirEmptyAt(fd) {
		t.Fatal("a new directory read as not empty")
	}
	for _, names := range [][]string{
		{"a"},
		{".hidden"},
		{"..x"},
		{strings.Repeat("n", 255)},
		func() []string {
			var many []string
			for i := 0; i < 100; i++ {
				many = append(many, "file-"+strconv.Itoa(i))
			}
			return many
		}(),
	} {
		for _, n := range names {
			if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if fsx.DirEmptyAt(fd) {
			t.Fatalf("%d entries (first %q) read as empty", len(names), names[0])
		}
		for _, n := range names {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
		if !fsx.DirEmptyAt(fd) {
			t.Fatalf("emptied again after %q, read as not empty", names[0])
		}
	}
}

// TestChildrenLeftSeesRunningAndUnreapedChildren checks the test that
// lets a kept helper skip its kill(-1): a running child and an exited one
// not yet reaped both count (and are left as they are), and only once
// both are reaped is nothing left.
func TestChildrenLeftSeesRunningAndUnreapedChildren(t *testing.T) {
	// Checked in a process of its own, which starts no other child: this
	// one's helpers and tests may have some.
	if os.Getenv("BASTION_TEST_CHILDREN_LEFT") != "1" {
		c := exec.Command(os.Args[0], "-test.run=^TestChildrenLeftSeesRunningAndUnreapedChildren$", "-test.count=1")
		c.Env = append(os.Environ(), "BASTION_TEST_CHILDREN_LEFT=1")
		out, err := c.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if childrenLeft() {
		t.Fatal("children left before any was started")
	}
	sleeper, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	quick, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if !childrenLeft() {
		t.Fatal("a running child was not seen")
	}
	_ = sleeper.Kill()
	if _, err := sleeper.Wait(); err != nil {
		t.Fatal(err)
	}
	// true has exited by now or soon; unreaped, it is still a child.
	time.Sleep(50 * time.Millisecond)
	if !childrenLeft() {
		t.Fatal("an exited child not yet reaped was not seen")
	}
	if _, err := quick.Wait(); err != nil {
		t.Fatal(err)
	}
	if childrenLeft() {
		t.Fatal("children left once both were reaped")
	}
}

// TestHelpersEndAfterTheirOwnDrawnRunLimit: a helper serves commands up to
// its own limit and no further (reusable), and the limits drawn for new
// helpers spread over maxRuns/2..3*maxRuns/2 rather than all being one
// number: helpers prepared together, which serve alternately, would
// otherwise all end within the same few calls, each starting a helper on
// the request path.
func TestHelpersEndAfterTheirOwnDrawnRunLimit(t *testing.T) {
	h := &helper{cfg: helperConfig{Isolation: IsolationNamespaces}, mq: 0, runLimit: 3}
	ended := helperResult{Started: true}
	if !h.reusable(ended, 2) {
		t.Fatal("a helper below its run limit was not kept")
	}
	if h.reusable(ended, 3) {
		t.Fatal("a helper that served its run limit was kept")
	}
	seen := map[int]bool{}
	sum := 0
	const n = 4000
	for range n {
		l := runLimit()
		if l < maxRuns/2 || l > 3*maxRuns/2 {
			t.Fatalf("run limit %d outside %d..%d", l, maxRuns/2, 3*maxRuns/2)
		}
		seen[l] = true
		sum += l
	}
	if len(seen) < maxRuns/2 {
		t.Fatalf("only %d distinct run limits in %d draws", len(seen), n)
	}
	if mean := float64(sum) / n; mean < maxRuns*0.9 || mean > maxRuns*1.1 {
		t.Fatalf("mean run limit %.1f, want about %d", mean, maxRuns)
	}
}

// TestUnderViewShmNamesPathsBeneathIt: a path under /dev/shm, directly or
// through a symbolic link, is named (the server warns that no helper can
// be kept for it); a sibling whose name merely starts the same, another
// tmpfs or an empty path is not.
func TestUnderViewShmNamesPathsBeneathIt(t *testing.T) {
	shm, err := os.MkdirTemp(ViewShm, "jail-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shm)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(shm, link); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	got := UnderViewShm(shm, "", other, "/dev/shmx/jail", link, ViewShm)
	if want := []string{shm, shm, ViewShm}; !slices.Equal(got, want) {
		t.Fatalf("UnderViewShm = %q, want %q", got, want)
	}
}
