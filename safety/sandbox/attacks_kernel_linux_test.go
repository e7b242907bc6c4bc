package sandbox

// Attacks on kernel resources that the namespaces do not isolate by
// themselves (issue 18, "Kernel resources"): socket families outside the
// network namespace's reach, per-user kernel counters charged to the
// server's user, and the host identity the command runs as. They run in
// the boundary harness (boundary_helpers_linux_test.go), in both
// isolations, and again with the server unprivileged
// (TestAttacksUnprivileged).

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
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
