package sandbox

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// What the watchdog counts past resident memory. Memory a command can pin
// that no resident set shows:
//
//   - files in the view's private /dev/shm (a tmpfs): statfs of it, one
//     call per tick (namespaces isolation; landlock isolation gives no
//     /dev/shm to write);
//   - socket buffers: with namespaces isolation and the network denied or
//     proxied the command has its own network namespace, so a NETLINK_SOCK_DIAG
//     dump from the helper (which is in it) lists exactly the command's
//     sockets (and the proxy relay's); the queued bytes of every AF_UNIX,
//     TCP and UDP socket are summed (UNIX_DIAG_MEMINFO, INET_DIAG_SKMEMINFO:
//     receive queue plus the larger of the allocated and queued send
//     memory, which is what the kernel charges: skb truesize, not payload);
//   - memfd and System V shared memory: refused by the seccomp filter.
//
// Not counted without a memory cgroup: pipe buffers (each pipe holds at most
// 64 KiB, and once the user's pipes hold pipe-user-pages-soft pages, 2
// pages; fds are bounded by max_open_files per process), and socket
// buffers with landlock isolation or network = "allow" (the host's network
// namespace: the helper cannot tell the command's sockets from the
// host's). A memory cgroup (memcg_linux.go) charges all of these.

// memWatch is the helper's view of the hidden memory of its command.
type memWatch struct {
	shm    bool // statfs /dev/shm (namespaces isolation)
	diag   int  // NETLINK_SOCK_DIAG socket in the command's network namespace, or -1
	events int  // the memory cgroup's oom_kill counter file, or -1
	buf    []byte
}

// newMemWatch prepares the counting for cfg; the helper calls it during its
// setup, in the command's namespaces, before the view hides the cgroup file.
func newMemWatch(cfg *helperConfig) *memWatch {
	w := &memWatch{diag: -1, events: -1}
	if cfg.MemEvents != "" {
		if fd, err := unix.Open(cfg.MemEvents, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			w.events = fd
		}
	}
	if cfg.Isolation != IsolationNamespaces {
		return w
	}
	w.shm = true
	if cfg.Net != NetAllow {
		if fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG); err == nil {
			w.diag = fd
			w.buf = make([]byte, 32<<10)
		}
	}
	return w
}

// oomKilled reports whether the kernel's OOM killer ended a process of the
// run's memory cgroup.
func (w *memWatch) oomKilled() bool {
	if w == nil || w.events < 0 {
		return false
	}
	var b [512]byte
	n, err := unix.Pread(w.events, b[:], 0)
	return err == nil && n > 0 && oomKills(b[:n]) > 0
}

// hiddenKB is the memory, in KiB, that the command holds outside any
// resident set and the watchdog can see: its /dev/shm and its sockets.
func (w *memWatch) hiddenKB() int64 {
	if w == nil {
		return 0
	}
	var total int64
	if w.shm {
		var st unix.Statfs_t
		if unix.Statfs("/dev/shm", &st) == nil {
			total += int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	if w.diag >= 0 {
		total += w.unixSockets()
		for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
			for _, proto := range []uint8{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
				total += w.inetSockets(fam, proto)
			}
		}
	}
	return total >> 10
}

// The sock_diag constants (linux/sock_diag.h, unix_diag.h, inet_diag.h).
const (
	sockDiagByFamily  = 20
	udiagShowMeminfo  = 0x20
	unixDiagMeminfo   = 5
	inetDiagSkMeminfo = 7
	skMeminfoRmem     = 0
	skMeminfoWmem     = 2
	skMeminfoQueued   = 5
	unixDiagMsgLen    = 16
	inetDiagMsgLen    = 72
)

// unixSockets sums the buffers of every AF_UNIX socket in the namespace.
func (w *memWatch) unixSockets() int64 {
	req := make([]byte, 24)
	req[0] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(req[4:], 0xffffffff) // every state
	binary.NativeEndian.PutUint32(req[12:], udiagShowMeminfo)
	binary.NativeEndian.PutUint32(req[16:], 0xffffffff) // no cookie
	binary.NativeEndian.PutUint32(req[20:], 0xffffffff)
	return w.dump(req, unixDiagMsgLen, unixDiagMeminfo)
}

// inetSockets sums the buffers of every socket of family and proto.
func (w *memWatch) inetSockets(family, proto uint8) int64 {
	req := make([]byte, 56)
	req[0], req[1] = family, proto
	req[2] = 1 << (inetDiagSkMeminfo - 1)
	binary.NativeEndian.PutUint32(req[4:], 0xffffffff)
	return w.dump(req, inetDiagMsgLen, inetDiagSkMeminfo)
}

// dump sends one sock_diag dump request and sums, over the sockets it
// lists, the memory attribute attr found after a message of msgLen bytes.
func (w *memWatch) dump(req []byte, msgLen int, attr uint16) int64 {
	msg := make([]byte, unix.NLMSG_HDRLEN+len(req))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	copy(msg[unix.NLMSG_HDRLEN:], req)
	if err := unix.Sendto(w.diag, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0
	}
	var total int64
	for {
		n, _, err := unix.Recvfrom(w.diag, w.buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return total
		}
		b := w.buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			typ := binary.NativeEndian.Uint16(b[4:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return total
			}
			if typ == unix.NLMSG_DONE || typ == unix.NLMSG_ERROR {
				return total
			}
			total += sockMem(b[unix.NLMSG_HDRLEN:l], msgLen, attr)
			b = b[min(nlmAlign(l), len(b)):]
		}
	}
}

func nlmAlign(n int) int { return (n + 3) &^ 3 }

// sockMem reads one socket's memory info attribute: the receive queue plus
// the larger of the send memory allocated and queued.
func sockMem(p []byte, msgLen int, attr uint16) int64 {
	if len(p) < msgLen {
		return 0
	}
	p = p[msgLen:]
	for len(p) >= 4 {
		l := int(binary.NativeEndian.Uint16(p[0:]))
		typ := binary.NativeEndian.Uint16(p[2:])
		if l < 4 || l > len(p) {
			return 0
		}
		if typ == attr && l >= 4+4*(skMeminfoQueued+1) {
			v := func(i int) int64 { return int64(binary.NativeEndian.Uint32(p[4+4*i:])) }
			return v(skMeminfoRmem) + max(v(skMeminfoWmem), v(skMeminfoQueued))
		}
		p = p[min(nlmAlign(l), len(p)):]
	}
	return 0
}
