//go:build linux && (amd64 || arm64)

package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompRefusesSocketFamiliesTheNamespacesDoNotIsolate reads the
// socket(2) and socketpair(2) verdicts of every mode's filter: only
// AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE are created (everything
// under landlock isolation with the network denied); vsock, packet, alg,
// key, bluetooth, xdp and the other netlink protocols are refused with
// EAFNOSUPPORT, and a family number whose high half is set is judged by
// its low half, as the kernel (an int argument) reads it.
func TestSeccompRefusesSocketFamiliesTheNamespacesDoNotIsolate(t *testing.T) {
	type call struct {
		name string
		nr   uintptr
		args [3]uint64
		// want in a mode whose filter has the family rules, and under
		// landlock isolation with the network denied.
		want, llDenyWant string
	}
	sock := func(name string, fam, typ, proto uint64, want string) call {
		ll := eacces
		return call{"socket/" + name, unix.SYS_SOCKET, [3]uint64{fam, typ, proto}, want, ll}
	}
	pair := func(name string, fam uint64, want string) call {
		ll := want
		return call{"socketpair/" + name, unix.SYS_SOCKETPAIR, [3]uint64{fam, unix.SOCK_STREAM, 0}, want, ll}
	}
	calls := []call{
		sock("unix", unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0, allow),
		sock("inet", unix.AF_INET, unix.SOCK_DGRAM, 0, allow),
		sock("inet6", unix.AF_INET6, unix.SOCK_STREAM, 0, allow),
		sock("netlink-route", unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE, allow),
		sock("netlink-audit", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT, eafnosupport),
		sock("netlink-uevent", unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT, eafnosupport),
		sock("netlink-sock-diag", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG, eafnosupport),
		sock("netlink-netfilter", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER, eafnosupport),
		sock("netlink-route-high-half", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE|1<<32, allow),
		sock("netlink-audit-high-half", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT|1<<32, eafnosupport),
		sock("vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0, eafnosupport),
		sock("vsock-high-half-inet", unix.AF_VSOCK|uint64(unix.AF_INET)<<32, unix.SOCK_STREAM, 0, eafnosupport),
		sock("packet", unix.AF_PACKET, unix.SOCK_RAW, 0x0300, eafnosupport),
		sock("alg", unix.AF_ALG, unix.SOCK_SEQPACKET, 0, eafnosupport),
		sock("key", unix.AF_KEY, unix.SOCK_RAW, 2, eafnosupport),
		sock("bluetooth", unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0, eafnosupport),
		sock("xdp", unix.AF_XDP, unix.SOCK_RAW, 0, eafnosupport),
		sock("tipc", unix.AF_TIPC, unix.SOCK_RDM, 0, eafnosupport),
		sock("unspec", unix.AF_UNSPEC, unix.SOCK_STREAM, 0, eafnosupport),
		pair("unix", unix.AF_UNIX, allow),
		pair("inet", unix.AF_INET, eafnosupport),
		pair("tipc", unix.AF_TIPC, eafnosupport),
		pair("vsock", unix.AF_VSOCK, eafnosupport),
	}
	for _, m := range seccompModes {
		prog := compileFilter(filterFor(m.iso, m.net))
		for _, c := range calls {
			want := c.want
			if m == llDeny {
				want = c.llDenyWant
			}
			d := seccompData{nr: int32(c.nr), arch: seccompArch}
			copy(d.args[:], c.args[:])
			if got := verdict(bpfRun(t, prog, d.bytes())); got != want {
				t.Errorf("%s %s (args %#x): %s, want %s", m, c.name, c.args, got, want)
			}
		}
	}
}
