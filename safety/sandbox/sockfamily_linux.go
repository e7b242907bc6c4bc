package sandbox

import (
	"golang.org/x/sys/unix"
)

// Socket families. A socket family is only as contained as the namespace
// that isolates it: AF_UNIX sockets live in the view (pathname) or the
// network namespace (abstract), AF_INET and AF_INET6 in the network
// namespace, and NETLINK_ROUTE shows and changes only the network
// namespace's own interfaces, addresses and routes. Every other family
// reaches something the namespaces do not cover: AF_VSOCK talks to the
// hypervisor and the other guests whatever the network namespace,
// AF_PACKET and AF_XDP see raw frames, AF_ALG is the kernel's crypto code
// (a long history of bugs), AF_KEY the host's IPsec keys, AF_BLUETOOTH
// the host's radios, and the other netlink protocols (NETLINK_AUDIT,
// NETLINK_KOBJECT_UEVENT, NETLINK_SOCK_DIAG, NETLINK_NETFILTER...) the
// host's audit trail, device events and connection tables.
//
// The seccomp filter (filterFor) therefore lets socket(2) create only
// sockFamilies, and AF_NETLINK only with protocol NETLINK_ROUTE (0);
// socketpair(2) only AF_UNIX (the one family with socket pairs that the
// namespaces isolate). Anything else fails with EAFNOSUPPORT, which is what
// a kernel built without that family answers, so programs that probe a
// family fall back as they would there. With landlock isolation and the
// network denied, socket(2) is refused altogether (EACCES) as before.

// sockFamilies are the families socket(2) may create (AF_NETLINK only
// with netlinkAllowed).
var sockFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// netlinkAllowed are the netlink protocols socket(2) may open.
var netlinkAllowed = []uint32{unix.NETLINK_ROUTE}

// retNoFamily is the filter's answer to a socket family it refuses.
const retNoFamily = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)

// familyRules are the filter's socket(2) and socketpair(2) rules.
func familyRules() []sysRule {
	return []sysRule{
		{nr: unix.SYS_SOCKET, arg: 0, allow: sockFamilies,
			narrow: []narrowing{{value: unix.AF_NETLINK, arg: 2, allow: netlinkAllowed}}, ret: retNoFamily},
		{nr: unix.SYS_SOCKETPAIR, arg: 0, allow: []uint32{unix.AF_UNIX}, ret: retNoFamily},
	}
}

// narrowing allows one more value of a rule's argument, but only when a
// second argument (arg) is one of allow: AF_NETLINK, with protocol
// NETLINK_ROUTE.
type narrowing struct {
	value uint32
	arg   int
	allow []uint32
}

// narrowBlock is the filter block for rule r, which has narrowings: the
// system call returns allow when r's argument is one of r.allow, or is the
// value of a narrowing whose second argument is one of its allow list; any
// other value returns r.ret; any other system call falls through to the
// next block. Laid out as
//
//	ld nr; jeq r.nr ? next : past the block
//	ld arg; jeq a1 ? ALLOW; ...; jeq v1 ? N1; ...
//	DENY: ret r.ret
//	ALLOW: ret allow
//	N1: ld arg'; jeq p1 ? N1.ALLOW; ...; ret r.ret; N1.ALLOW: ret allow
//	...
func narrowBlock(r sysRule) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	head := 3 + len(r.allow) + len(r.narrow)
	allowAt := head + 1 // head itself is DENY
	starts := make([]int, len(r.narrow))
	size := head + 2
	for i, n := range r.narrow {
		starts[i] = size
		size += 1 + len(n.allow) + 2
	}
	// to is the jump offset from the instruction at index from to index at.
	to := func(from, at int) uint8 { return uint8(at - from - 1) }
	b := make([]unix.SockFilter, 0, size)
	b = append(b, bpfStmt(ld, seccompNR))
	b = append(b, bpfJump(jeq, uint32(r.nr), 0, to(1, size)))
	b = append(b, bpfStmt(ld, argOffset(r.arg)))
	for _, v := range r.allow {
		b = append(b, bpfJump(jeq, v, to(len(b), allowAt), 0))
	}
	for i, n := range r.narrow {
		b = append(b, bpfJump(jeq, n.value, to(len(b), starts[i]), 0))
	}
	b = append(b, bpfStmt(ret, r.ret), bpfStmt(ret, retAllow))
	for _, n := range r.narrow {
		end := len(b) + 1 + len(n.allow) + 1 // its own "ret allow"
		b = append(b, bpfStmt(ld, argOffset(n.arg)))
		for _, v := range n.allow {
			b = append(b, bpfJump(jeq, v, to(len(b), end), 0))
		}
		b = append(b, bpfStmt(ret, r.ret), bpfStmt(ret, retAllow))
	}
	return b
}
