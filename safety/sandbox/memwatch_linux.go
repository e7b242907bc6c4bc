package sandbox

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"

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
//     memory, which is what the kernel charges: skb truesize, not payload).
//     In the host's network namespace (landlock isolation, or network =
//     "allow") the same dumps list the host's sockets too: only those whose
//     inode one of the command's processes holds (a "socket:[N]" link in
//     /proc/PID/fd) are summed: every tick while the command holds fewer
//     than scanCheap descriptors, every scanEvery ticks past that, as
//     reading every descriptor link costs more. A socket the command passed away in a
//     message (SCM_RIGHTS) and closed is held by no process: not counted;
//   - memfd and System V shared memory: refused by the seccomp filter.
//
//   - pipes: every pipe a process of the command holds counts pipeBytes.
//
// The descriptor links are read every tick while the command holds fewer
// than scanCheap descriptors, every scanEvery ticks past that.
//
// Not counted without a memory cgroup: sockets in flight in another
// socket's queue (see above), and pipe buffers past pipeBytes. A memory
// cgroup (memcg_linux.go) charges all of these.

// scanEvery is how many watchdog ticks pass between two scans of the
// command's descriptors (host network namespace only) once it holds many.
// A command holding fewer than scanCheap descriptors is scanned every tick.
// TCP sockets are listed every tcpEvery ticks (see inetInUse).
const (
	scanEvery = 4
	scanCheap = 256
	tcpEvery  = 8
)

// memWatch is the helper's view of the hidden memory of its command.
type memWatch struct {
	shm    bool // statfs /dev/shm (namespaces isolation)
	diag   int  // NETLINK_SOCK_DIAG socket, or -1
	scan   bool // diag is in the host's network namespace: count the command's sockets only
	inet   bool // the command can have TCP and UDP sockets
	events int  // the memory cgroup's oom_kill counter file, or -1
	buf    []byte
	inodes map[uint32]bool // the command's sockets
	pipes  map[string]bool // the command's pipes, by inode
	socks  int64           // their memory at the last scan, bytes
	links  int             // the descriptor links read by the last scan
	tcp    int64           // TCP socket memory at the last TCP dump, bytes
	tick   int
}

// newMemWatch prepares the counting for cfg; the helper calls it during its
// setup, in the command's namespaces, before the view hides the cgroup file.
func newMemWatch(cfg *helperConfig) *memWatch {
	w := &memWatch{diag: -1, events: -1, inodes: map[uint32]bool{}, pipes: map[string]bool{}}
	if cfg.MemEvents != "" {
		if fd, err := unix.Open(cfg.MemEvents, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			w.events = fd
		}
	}
	w.shm = cfg.Isolation == IsolationNamespaces
	w.scan = cfg.Isolation != IsolationNamespaces || cfg.Net == NetAllow
	// With landlock isolation and the network denied, seccomp refuses
	// socket(2): socketpair(2) makes AF_UNIX sockets only.
	w.inet = cfg.Isolation == IsolationNamespaces || cfg.Net != NetDeny
	if fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG); err == nil {
		w.diag = fd
		w.buf = make([]byte, 32<<10)
	}
	return w
}

// oomKilled reports whether the kernel's OOM killer ended a process of the
// run's memory cgroup.
// hasEvents reports whether the memory cgroup's OOM counter is open.
func (w *memWatch) hasEvents() bool { return w != nil && w.events >= 0 }

func (w *memWatch) oomKilled() bool {
	if w == nil || w.events < 0 {
		return false
	}
	var b [512]byte
	n, err := unix.Pread(w.events, b[:], 0)
	return err == nil && n > 0 && oomKills(b[:n]) > 0
}

// hiddenKB is the memory, in KiB, that the command (whose processes are
// pids) holds outside any resident set and the watchdog can see: its
// /dev/shm, its sockets and its pipes.
func (w *memWatch) hiddenKB(pids []int) int64 {
	if w == nil {
		return 0
	}
	w.tick++
	var total int64
	if w.shm {
		var st unix.Statfs_t
		if unix.Statfs("/dev/shm", &st) == nil {
			total += int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	if w.links < scanCheap || w.tick%scanEvery == 1 {
		nsock := w.scanDescriptors(pids)
		w.socks = 0
		if w.diag >= 0 && (!w.scan || nsock > 0) {
			w.socks = w.unixSockets()
			tcp, udp := false, false
			if w.inet {
				tcp, udp = inetInUse()
			}
			if udp {
				w.socks += w.inetSockets(unix.AF_INET, unix.IPPROTO_UDP) + w.inetSockets(unix.AF_INET6, unix.IPPROTO_UDP)
			}
			switch {
			case !tcp:
				w.tcp = 0
			case w.tick%tcpEvery == 1:
				w.tcp = w.inetSockets(unix.AF_INET, unix.IPPROTO_TCP) + w.inetSockets(unix.AF_INET6, unix.IPPROTO_TCP)
			}
			w.socks += w.tcp
		}
	}
	return (total + w.socks + int64(len(w.pipes))*pipeBytes) >> 10
}

// inetInUse reports whether any TCP or UDP socket (IPv4 or IPv6) is in
// use in the helper's network namespace (/proc/net/sockstat counts them
// per namespace): a TCP dump walks the kernel's whole connection table,
// shared by every namespace (measured: 2.8 ms on a 24 GiB machine, against
// 25 us for AF_UNIX), so it is done only when there is something to find,
// and every tcpEvery ticks.
func inetInUse() (tcp, udp bool) {
	for _, f := range []string{"/proc/net/sockstat", "/proc/net/sockstat6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			return true, true
		}
		for _, line := range strings.Split(string(data), "\n") {
			fl := strings.Fields(line)
			if len(fl) < 3 || fl[1] != "inuse" || fl[2] == "0" {
				continue
			}
			switch fl[0] {
			case "TCP:", "TCP6:":
				tcp = true
			case "UDP:", "UDP6:":
				udp = true
			}
		}
	}
	return tcp, udp
}

// pipeBytes is what each pipe the command holds counts for: the default
// capacity (16 pages), the most a pipe holds unless enlarged. A pipe holds
// 2 pages once its user's pipes hold fs.pipe-user-pages-soft pages (64 MiB),
// and past that an unprivileged user cannot enlarge one: the count is over
// by up to 56 KiB a pipe beyond that, under by at most that 64 MiB.
const pipeBytes = 64 << 10

// scanDescriptors collects, from the descriptor links of the processes
// pids, the inodes of their sockets (w.inodes) and of their pipes
// (w.pipes), and returns how many sockets there are.
func (w *memWatch) scanDescriptors(pids []int) int {
	clear(w.inodes)
	clear(w.pipes)
	w.links = 0
	link := make([]byte, 64)
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(-1)
		w.links += len(names)
		fd := int(d.Fd())
		for _, n := range names {
			k, err := unix.Readlinkat(fd, n, link)
			if err != nil {
				continue
			}
			l := string(link[:k])
			if v, ok := strings.CutPrefix(l, "socket:["); ok {
				if ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 32); err == nil {
					w.inodes[uint32(ino)] = true
				}
			} else if v, ok := strings.CutPrefix(l, "pipe:["); ok {
				w.pipes[v] = true
			}
		}
		d.Close()
	}
	return len(w.inodes)
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
	return w.dump(req, unixDiagMsgLen, unixDiagMeminfo, 4)
}

// inetSockets sums the buffers of every socket of family and proto.
func (w *memWatch) inetSockets(family, proto uint8) int64 {
	req := make([]byte, 56)
	req[0], req[1] = family, proto
	req[2] = 1 << (inetDiagSkMeminfo - 1)
	binary.NativeEndian.PutUint32(req[4:], 0xffffffff)
	return w.dump(req, inetDiagMsgLen, inetDiagSkMeminfo, 68)
}

// dump sends one sock_diag dump request and sums, over the sockets it
// lists, the memory attribute attr found after a message of msgLen bytes
// (with scan, only over the sockets in w.inodes: the inode is at inoOff of
// the message).
func (w *memWatch) dump(req []byte, msgLen int, attr uint16, inoOff int) int64 {
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
			m := b[unix.NLMSG_HDRLEN:l]
			if !w.scan || len(m) >= inoOff+4 && w.inodes[binary.NativeEndian.Uint32(m[inoOff:])] {
				total += sockMem(m, msgLen, attr)
			}
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
