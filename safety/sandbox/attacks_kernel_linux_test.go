package sandbox

// Attacks on kernel resources that the namespaces do not isolate by
// themselves (issue 18, "Kernel resources"): socket families outside the
// network namespace's reach, per-user kernel counters charged to the
// server's user, and the host identity the command runs as. They run in
// the boundary harness (boundary_helpers_linux_test.go), in both
// isolations, and again with the server unprivileged
// (TestAttacksUnprivileged).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// familiesPy tries to create one socket of each family it is given
// (name:family:type:protocol), and socket pairs, and prints
// "ok family NAME" or "refused family NAME - errno N".
const familiesPy = `
import os, socket, sys
def say(*a):
    sys.stdout.write(" ".join(str(x) for x in a) + "\n"); sys.stdout.flush()
for spec in sys.argv[1:]:
    kind, name, fam, typ, proto = spec.split(":")
    try:
        if kind == "pair":
            a, b = socket.socketpair(int(fam), int(typ), int(proto)); a.close(); b.close()
        else:
            socket.socket(int(fam), int(typ), int(proto)).close()
        say("ok", kind, name)
    except OSError as e:
        say("refused", kind, name, "- errno", e.errno)
open("done-families", "w").write("done")
`

// bndFamily is one socket the families attack tries to create.
type bndFamily struct {
	kind, name      string // kind: "socket" or "pair"
	fam, typ, proto int
	isolated        bool // a family the namespaces isolate: allowed
}

func (f bndFamily) arg() string {
	return fmt.Sprintf("%s:%s:%d:%d:%d", f.kind, f.name, f.fam, f.typ, f.proto)
}

// bndFamilies: AF_VSOCK (which follows no network namespace), AF_PACKET,
// AF_ALG, AF_XDP and netlink's audit and uevent protocols must be refused;
// AF_UNIX, AF_INET, AF_INET6, netlink route and AF_UNIX socket pairs stay.
var bndFamilies = []bndFamily{
	{"socket", "vsock", 40, syscall.SOCK_STREAM, 0, false},
	{"socket", "packet", syscall.AF_PACKET, syscall.SOCK_RAW, 0x0300, false},
	{"socket", "alg", 38, syscall.SOCK_SEQPACKET, 0, false},
	{"socket", "xdp", 44, syscall.SOCK_RAW, 0, false},
	{"socket", "netlink-audit", syscall.AF_NETLINK, syscall.SOCK_RAW, syscall.NETLINK_AUDIT, false},
	{"socket", "netlink-uevent", syscall.AF_NETLINK, syscall.SOCK_DGRAM, 15, false},
	{"pair", "vsock", 40, syscall.SOCK_STREAM, 0, false},
	{"socket", "unix", syscall.AF_UNIX, syscall.SOCK_STREAM, 0, true},
	{"socket", "inet", syscall.AF_INET, syscall.SOCK_DGRAM, 0, true},
	{"socket", "inet6", syscall.AF_INET6, syscall.SOCK_STREAM, 0, true},
	{"socket", "netlink-route", syscall.AF_NETLINK, syscall.SOCK_RAW, syscall.NETLINK_ROUTE, true},
	{"pair", "unix", syscall.AF_UNIX, syscall.SOCK_STREAM, 0, true},
}

// hostCreates reports whether the test process (the server's user) can
// create f on the host: a refusal inside the sandbox of a family the host
// has is the filter's doing, not the kernel's.
func (f bndFamily) hostCreates() bool {
	if f.kind == "pair" {
		fds, err := syscall.Socketpair(f.fam, f.typ, f.proto)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		return err == nil
	}
	fd, err := syscall.Socket(f.fam, f.typ|syscall.SOCK_CLOEXEC, f.proto)
	if err == nil {
		syscall.Close(fd)
	}
	return err == nil
}

// The command creates a socket of every family it can think of. Only the
// families the namespaces isolate are created; the rest fail with
// EAFNOSUPPORT, the filter's answer (under landlock isolation with the
// network denied, socket(2) fails with EACCES for every family, as
// before), with the network denied and allowed.
func TestAttackCreateSocketOfFamilyNamespacesDoNotIsolate(t *testing.T) {
	t.Parallel()
	var args, hostHas []string
	for _, f := range bndFamilies {
		args = append(args, f.arg())
		if f.hostCreates() {
			hostHas = append(hostHas, f.kind+" "+f.name)
		}
	}
	t.Logf("the host (uid %d) itself can create: %s", syscall.Getuid(), strings.Join(hostHas, ", "))
	if !strings.Contains(strings.Join(hostHas, ","), "socket vsock") {
		t.Logf("this kernel has no AF_VSOCK: the vsock row proves only the filter's errno")
	}
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		for _, net := range []NetMode{NetDeny, NetAllow} {
			b := newBndBox(t, iso)
			b.write(t, "families.py", familiesPy)
			s := b.spec(t, append([]string{"python3", "families.py"}, args...)...)
			s.Net = net
			out := b.run(t, s)
			b.mustHaveRun(t, b.jail, "families")
			if wantConf := "(socket families: unix,inet,inet6,netlink-route)"; !(iso == IsolationLandlock && net == NetDeny) &&
				!strings.Contains(out.Confinement, wantConf) {
				t.Errorf("%s, network %s: the confinement %q does not say %s", iso, net, out.Confinement, wantConf)
			}
			lines := strings.Split(b.stdout.String(), "\n")
			for _, f := range bndFamilies {
				var got string
				for _, l := range lines {
					if l == "ok "+f.kind+" "+f.name || strings.HasPrefix(l, "refused "+f.kind+" "+f.name+" - ") {
						got = l
					}
				}
				want := "refused " + f.kind + " " + f.name + " - errno 97" // EAFNOSUPPORT
				switch {
				case iso == IsolationLandlock && net == NetDeny && f.kind == "socket":
					want = "refused " + f.kind + " " + f.name + " - errno 13" // EACCES: no socket at all
				case f.isolated:
					want = "ok " + f.kind + " " + f.name
				}
				if got != want {
					t.Errorf("%s, network %s: %s %s: got %q, want %q\n%s", iso, net, f.kind, f.name, got, want, b.transcript())
				}
			}
		}
	})
}

// inotifyPy takes every inotify instance it can, then tries for more from
// a nested user namespace of its own (where it is root and the maxima are
// its own to raise), reports, and holds them all until the test writes
// "release" in the jail.
const inotifyPy = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def say(*a):
    sys.stdout.write(" ".join(str(x) for x in a) + "\n"); sys.stdout.flush()
try:
    names = sorted(os.listdir("/proc/sys/user"))
except OSError as e:
    names = []
    say("counters unreadable", e.errno)
for name in names:
    try:
        say("counter", name, open("/proc/sys/user/" + name).read().strip())
    except OSError as e:
        say("counter", name, "unreadable", e.errno)
def take():
    fds, err = [], 0
    while len(fds) < 100000:
        fd = libc.inotify_init1(0)
        if fd < 0:
            err = ctypes.get_errno()
            break
        fds.append(fd)
    return fds, err
fds, err = take()
say("held", len(fds), "errno", err)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:
        os.write(w, b"nested unshare-refused %d 0\n" % ctypes.get_errno())
        os._exit(0)
    try:
        open("/proc/sys/user/max_inotify_instances", "w").write("100000")
    except OSError:
        pass
    more, err = take()
    os.write(w, b"nested held %d %d\n" % (len(more), err))
    os._exit(0)
os.waitpid(pid, 0)
say(os.read(r, 200).decode().strip())
open("held-inotify", "w").write(str(len(fds)))
deadline = time.time() + 15
while not os.path.exists("release") and time.time() < deadline:
    time.sleep(0.02)
open("done-inotify", "w").write("done")
`

// The command takes every inotify instance it can (and more from a user
// namespace of its own) while the test, as the server's user, creates one
// on the host: it can. With namespaces the command gets at most its cap
// (16, or a quarter of the server's maximum) and sees every
// /proc/sys/user counter capped; with landlock isolation inotify is
// refused (ENOSYS), as no user namespace can hold a cap.
func TestAttackExhaustServerUsersInotifyInstances(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		b.write(t, "inotify.py", inotifyPy)
		s := b.spec(t, "python3", "inotify.py")
		type ran struct {
			out Outcome
			err error
		}
		done := make(chan ran, 1)
		go func() {
			out, err := Run(context.Background(), s)
			done <- ran{out, err}
		}()
		held := filepath.Join(b.jail, "held-inotify")
		var hostErr error
		hostTried := false
		deadline := time.Now().Add(20 * time.Second)
	wait:
		for time.Now().Before(deadline) {
			select {
			case r := <-done:
				done <- r
				break wait
			default:
			}
			if _, err := os.Stat(held); err == nil {
				fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
				if err == nil {
					unix.Close(fd)
				}
				hostErr, hostTried = err, true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := os.WriteFile(filepath.Join(b.jail, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("%s: Run: %v\n%s", iso, r.err, b.transcript())
		}
		b.mustHaveRun(t, b.jail, "inotify")
		if !hostTried {
			t.Fatalf("%s: the command never reported holding its instances\n%s", iso, b.transcript())
		}
		if hostErr != nil {
			t.Errorf("%s: while the command held its inotify instances, the server's user (uid %d) could not create one on the host: %v\n%s",
				iso, os.Getuid(), hostErr, b.transcript())
		}
		var n, errno int
		var nested string
		counters := map[string]string{}
		for _, l := range strings.Split(b.stdout.String(), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) == 4 && f[0] == "held":
				n, _ = strconv.Atoi(f[1])
				errno, _ = strconv.Atoi(f[3])
			case len(f) >= 3 && f[0] == "counter":
				counters[f[1]] = f[2]
			case len(f) == 4 && f[0] == "nested":
				nested = l
			}
		}
		if iso == IsolationLandlock {
			if n != 0 || errno != int(unix.ENOSYS) {
				t.Errorf("landlock: the command created %d inotify instances (errno %d); want none, ENOSYS\n%s", n, errno, b.transcript())
			}
			if !strings.Contains(r.out.Confinement, "no inotify/fanotify") {
				t.Errorf("landlock: the confinement %q does not say inotify is refused", r.out.Confinement)
			}
			return
		}
		caps := counterCaps()
		if n < 1 || int64(n) > caps["max_inotify_instances"] || errno != int(unix.EMFILE) {
			t.Errorf("namespaces: the command held %d inotify instances (errno %d); want 1 to %d, then EMFILE\n%s",
				n, errno, caps["max_inotify_instances"], b.transcript())
		}
		for _, c := range userCounters {
			want, ok := caps[c.name]
			if !ok {
				continue
			}
			if got := counters[c.name]; got != strconv.FormatInt(want, 10) {
				t.Errorf("namespaces: the command's %s is %q, want %d", c.name, got, want)
			}
		}
		// A user namespace of its own is charged to the command's: it
		// gets nothing more (or cannot be created).
		if f := strings.Fields(nested); len(f) != 4 || (f[1] == "held" && f[2] != "0") {
			t.Errorf("namespaces: from a nested user namespace: %q; want no more instances\n%s", nested, b.transcript())
		}
		t.Logf("namespaces: held %d (cap %d); %s", n, caps["max_inotify_instances"], nested)
		if !strings.Contains(r.out.Confinement, "userns counters capped") {
			t.Errorf("namespaces: the confinement %q does not say the counters are capped", r.out.Confinement)
		}
	})
}

// identPy reports who the command is (euid, egid, groups), tries to read
// each file it is given, creates "created-by-command" in its working
// directory and in HOME, then, with "nproc", lowers its RLIMIT_NPROC to 4
// and forks up to 10 children.
const identPy = `
import errno, os, resource, sys, time
def say(*a):
    sys.stdout.write(" ".join(str(x) for x in a) + "\n"); sys.stdout.flush()
say("ident", os.geteuid(), os.getegid(), ",".join(str(g) for g in os.getgroups()) or "-")
for p in sys.argv[2:]:
    try:
        with open(p, "rb") as f:
            d = f.read()
        say("ok read", p, d[:80])
    except OSError as e:
        say("refused read", p, "- errno", e.errno)
for d in (".", os.environ["HOME"], os.environ["TMPDIR"]):
    try:
        open(os.path.join(d, "created-by-command"), "w").write("x")
        say("ok create", d)
    except OSError as e:
        say("refused create", d, "- errno", e.errno)
if sys.argv[1] == "nproc":
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (4, hard))
    n, err = 0, 0
    for i in range(10):
        try:
            pid = os.fork()
        except OSError as e:
            err = e.errno
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
    say("forked", n, "errno", err)
open("done-ident", "w").write("done")
`

// bndIdent runs identPy (mode "files" or "nproc") with read paths extra
// and returns the outcome and its report lines by first word pair.
func bndIdent(t *testing.T, b *bndBox, mode string, readPaths []string, files ...string) (Outcome, []string) {
	t.Helper()
	b.write(t, "ident.py", identPy)
	s := b.spec(t, append([]string{"python3", "ident.py", mode}, files...)...)
	s.ReadPaths = append(append([]string{}, readPaths...), DefaultReadPaths...)
	out := b.run(t, s)
	b.mustHaveRun(t, b.jail, "ident")
	return out, strings.Split(b.stdout.String(), "\n")
}

// bndLine returns the report line starting with prefix.
func bndLine(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// bndRootOnlyDir is a read path (0755) holding a 0600 file of the
// server's user (root in the root pass) with a canary.
func bndRootOnlyDir(t *testing.T) (dir, secret, canary string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	canary = bndToken("rootonly")
	secret = filepath.Join(dir, "secret.key")
	if err := os.WriteFile(secret, []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, secret, canary
}

// With the server as root, the command runs as an unprivileged host user
// (nobody, the jail being root's): a root-only file in a read path (one
// the test makes, and the system's TLS private key under the default read
// path /etc/ssl) cannot be read, and what it creates in the jail, HOME
// and TMPDIR still belongs to the jail's owner (root). With landlock
// isolation and root-owned trees the command stays uid 0 without
// capabilities, and says so: the stated weaker point of that mode.
// Unprivileged, the command is the server's user.
func TestAttackReadRootOnlyFileInReadPath(t *testing.T) {
	t.Parallel()
	const snakeoil = "/etc/ssl/private/ssl-cert-snakeoil.key"
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		dir, secret, canary := bndRootOnlyDir(t)
		out, lines := bndIdent(t, b, "files", []string{dir}, secret, snakeoil)
		root := os.Getuid() == 0
		stillRoot := root && iso == IsolationLandlock
		wantUID := os.Getuid()
		if root && iso == IsolationNamespaces {
			wantUID = nobodyID
		}
		if !strings.Contains(out.Confinement, fmt.Sprintf("runs as host uid %d", wantUID)) {
			t.Errorf("%s: the confinement %q does not say the command runs as host uid %d", iso, out.Confinement, wantUID)
		}
		if root && iso == IsolationNamespaces {
			if got, want := bndLine(lines, "ident "), fmt.Sprintf("ident %d %d -", nobodyID, nobodyID); got != want {
				t.Errorf("namespaces: the command is %q, want %q (no supplementary group)\n%s", got, want, b.transcript())
			}
			if strings.Contains(b.stdout.String(), canary) || bndLine(lines, "ok read "+secret) != "" {
				t.Errorf("namespaces: the command read a root-only (0600) file in a read path\n%s", b.transcript())
			}
		}
		if !stillRoot {
			if _, err := os.Stat(snakeoil); err == nil && bndLine(lines, "ok read "+snakeoil) != "" {
				t.Errorf("%s: the command read %s\n%s", iso, snakeoil, b.transcript())
			}
		} else {
			t.Logf("landlock, server root, root-owned jail: the command runs as uid 0 without capabilities (%s)", bndLine(lines, "ident "))
		}
		for _, d := range []string{b.jail, b.home, b.tmp} {
			p := filepath.Join(d, "created-by-command")
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				t.Errorf("%s: the command could not create a file in %s: %v\n%s", iso, d, err, b.transcript())
				continue
			}
			if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
				t.Errorf("%s: %s belongs to %d:%d, not the owner of its directory %d:%d", iso, p, st.Uid, st.Gid, os.Getuid(), os.Getgid())
			}
		}
	})
}

// bndJailOwner is the unprivileged user a root test gives the jail to.
const bndJailOwner = 1000

// With the server as root and the jail owned by an unprivileged user, the
// command runs as that user (namespaces: HOME and TMPDIR, which belong to
// root, are idmapped to it; landlock isolation: when every writable tree
// is that user's), cannot read a root-only file in a read path, and what
// it creates belongs to that user. (Unprivileged, no test can give a jail
// away: the command is then the server's user, checked above.)
func TestAttackRunsAsJailOwnerNotRoot(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Logf("the server is uid %d: no jail can be given to another user; TestAttackReadRootOnlyFileInReadPath covers this pass", os.Getuid())
		return
	}
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		give := []string{b.jail}
		if iso == IsolationLandlock {
			give = append(give, b.home, b.tmp)
		}
		for _, d := range give {
			if err := os.Chown(d, bndJailOwner, bndJailOwner); err != nil {
				t.Fatal(err)
			}
		}
		// The jail's parents must be passable for the owner in landlock
		// isolation (t.TempDir and its parent are 0700).
		for _, d := range []string{filepath.Dir(b.jail), filepath.Dir(filepath.Dir(b.jail))} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		dir, secret, canary := bndRootOnlyDir(t)
		out, lines := bndIdent(t, b, "files", []string{dir}, secret)
		if !strings.Contains(out.Confinement, fmt.Sprintf("runs as host uid %d", bndJailOwner)) {
			t.Errorf("%s: the confinement %q does not say the command runs as host uid %d", iso, out.Confinement, bndJailOwner)
		}
		if got, want := bndLine(lines, "ident "), fmt.Sprintf("ident %d %d -", bndJailOwner, bndJailOwner); got != want {
			t.Errorf("%s: the command is %q, want %q\n%s", iso, got, want, b.transcript())
		}
		if strings.Contains(b.stdout.String(), canary) {
			t.Errorf("%s: the command read a root-only (0600) file in a read path\n%s", iso, b.transcript())
		}
		for _, c := range []struct {
			dir      string
			uid, gid int
		}{{b.jail, bndJailOwner, bndJailOwner}, {b.home, 0, 0}, {b.tmp, 0, 0}} {
			if iso == IsolationLandlock {
				c.uid, c.gid = bndJailOwner, bndJailOwner
			}
			var st syscall.Stat_t
			p := filepath.Join(c.dir, "created-by-command")
			if err := syscall.Stat(p, &st); err != nil {
				t.Errorf("%s: the command could not create a file in %s: %v\n%s", iso, c.dir, err, b.transcript())
				continue
			}
			if int(st.Uid) != c.uid || int(st.Gid) != c.gid {
				t.Errorf("%s: %s belongs to %d:%d, want its directory's owner %d:%d", iso, p, st.Uid, st.Gid, c.uid, c.gid)
			}
		}
	})
}

// The command lowers its own RLIMIT_NPROC to 4 and forks: the fifth
// process fails with EAGAIN. As host root (a root server's command before)
// the kernel exempted it and every fork succeeded. With landlock isolation
// and a root server's root-owned trees the command is still uid 0 (the
// stated weaker point) and the watchdog is what bounds it.
func TestAttackForkPastNprocLimit(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		_, lines := bndIdent(t, b, "nproc", nil)
		f := strings.Fields(bndLine(lines, "forked "))
		if len(f) != 4 {
			t.Fatalf("%s: no fork report\n%s", iso, b.transcript())
		}
		n, _ := strconv.Atoi(f[1])
		if os.Getuid() == 0 && iso == IsolationLandlock {
			t.Logf("landlock, server root: the command (uid 0) forked %d children past RLIMIT_NPROC 4 (errno %s)", n, f[3])
			return
		}
		if n > 3 || f[3] != strconv.Itoa(int(unix.EAGAIN)) {
			t.Errorf("%s: with RLIMIT_NPROC 4 the command forked %d children (errno %s); want at most 3, then EAGAIN\n%s",
				iso, n, f[3], b.transcript())
		}
	})
}
