//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// These tests read the seccomp program the way the kernel does, without
// the kernel: bpfRun below interprets the classic BPF instructions that
// compileFilter emits over a struct seccomp_data built in memory. Nothing
// is installed; the kernel-backed tests (TestAttack*, in
// boundary_linux_test.go) prove that the installed filter behaves the same.

// seccompData is struct seccomp_data (linux/seccomp.h).
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays d out as the kernel does on a little-endian machine (amd64
// and arm64 both are).
func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(d.nr))
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// bpfMaxInsns is BPF_MAXINSNS: the kernel refuses a longer program.
const bpfMaxInsns = 4096

// bpfRun runs prog over data and returns what the program returns. It
// knows only the instructions compileFilter may emit (32-bit absolute
// loads, jeq/jge/jset against a constant, ja, return a constant) and
// fails the test on any other, on a load outside seccomp_data or not
// aligned, on a jump past the end and on running off the end, as the
// kernel's checker would refuse such a program.
func bpfRun(t *testing.T, prog []unix.SockFilter, data []byte) uint32 {
	t.Helper()
	if len(prog) == 0 || len(prog) > bpfMaxInsns {
		t.Fatalf("program of %d instructions (1 to %d allowed)", len(prog), bpfMaxInsns)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || int(in.K)+4 > len(data) {
				t.Fatalf("instruction %d loads at offset %d, outside seccomp_data or unaligned", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
			continue
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += jump(acc == in.K, in)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += jump(acc >= in.K, in)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += jump(acc&in.K != 0, in)
		default:
			t.Fatalf("instruction %d has code %#x, which this interpreter (and compileFilter) does not use", pc, in.Code)
		}
		if pc+1 >= len(prog) {
			t.Fatalf("instruction %d jumps past the end of the program", pc)
		}
	}
	t.Fatal("the program ran off its end without returning")
	return 0
}

func jump(cond bool, in unix.SockFilter) int {
	if cond {
		return int(in.Jt)
	}
	return int(in.Jf)
}

// verdict names a seccomp return value: "allow", or the errno's name.
func verdict(ret uint32) string {
	switch {
	case ret == unix.SECCOMP_RET_ALLOW:
		return "allow"
	case ret&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ERRNO:
		return unix.ErrnoName(unix.Errno(ret & unix.SECCOMP_RET_DATA))
	}
	return fmt.Sprintf("action %#x", ret)
}

// seccompMode is the isolation and network mode a filter is built for.
type seccompMode struct {
	iso Isolation
	net NetMode
}

func (m seccompMode) String() string { return string(m.iso) + "+" + string(m.net) }

var (
	nsDeny       = seccompMode{IsolationNamespaces, NetDeny}
	nsProxy      = seccompMode{IsolationNamespaces, NetProxy}
	nsAllow      = seccompMode{IsolationNamespaces, NetAllow}
	llDeny       = seccompMode{IsolationLandlock, NetDeny}
	llAllow      = seccompMode{IsolationLandlock, NetAllow}
	seccompModes = []seccompMode{nsDeny, nsProxy, nsAllow, llDeny, llAllow}
)

// foreignArch is the compatibility ABI of this architecture, whose entry
// points the filter must not let through.
var foreignArch = map[uint32]uint32{unix.AUDIT_ARCH_X86_64: unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_AARCH64: unix.AUDIT_ARCH_ARM}[seccompArch]

// seccompCase is one system call as the filter sees it: the architecture,
// the number and one argument (index arg, value val), and the verdict.
type seccompCase struct {
	name string
	mode seccompMode
	arch uint32
	nr   uintptr
	arg  int
	val  uint64
	want string
}

const (
	allow  = "allow"
	eperm  = "EPERM"
	eacces = "EACCES"
	enosys = "ENOSYS"
	// eafnosupport is the answer to a socket family the filter refuses.
	eafnosupport = "EAFNOSUPPORT"
)

// seccompCases hold for every architecture; legacyCases (per architecture
// file) add the older system calls amd64 still has.
func seccompCases() []seccompCase {
	n := seccompArch
	cases := []seccompCase{
		{"getpid", nsDeny, n, unix.SYS_GETPID, 0, 0, allow},
		{"getpid/landlock", llDeny, n, unix.SYS_GETPID, 0, 0, allow},
		{"getpid/foreign-arch", nsDeny, foreignArch, unix.SYS_GETPID, 0, 0, enosys},
		{"getpid/unknown-arch", llAllow, 0, unix.SYS_GETPID, 0, 0, enosys},
		{"getpid/x32-bit", nsDeny, n, x32Bit | unix.SYS_GETPID, 0, 0, enosys},
		{"openat/plain-mode", nsDeny, n, unix.SYS_OPENAT, 3, 0o644, allow},
		{"openat/setuid-mode", nsDeny, n, unix.SYS_OPENAT, 3, 0o4755, eperm},
		{"openat/setgid-mode", llAllow, n, unix.SYS_OPENAT, 3, 0o2755, eperm},
		{"openat/setuid-in-high-half-only", nsDeny, n, unix.SYS_OPENAT, 3, 0o4755 << 32, allow},
		{"openat2", nsAllow, n, unix.SYS_OPENAT2, 0, 0, enosys},
		{"fchmod/setgid", nsDeny, n, unix.SYS_FCHMOD, 1, 0o2755, eperm},
		{"fchmod/plain", nsDeny, n, unix.SYS_FCHMOD, 1, 0o755, allow},
		{"fchmod/plain/landlock", llDeny, n, unix.SYS_FCHMOD, 1, 0o755, eperm},
		{"fchmodat/setuid", nsProxy, n, unix.SYS_FCHMODAT, 2, 0o4755, eperm},
		{"fchmodat/plain", nsProxy, n, unix.SYS_FCHMODAT, 2, 0o644, allow},
		{"fchmodat/plain/landlock", llAllow, n, unix.SYS_FCHMODAT, 2, 0o644, eperm},
		{"fchmodat2/setuid", nsDeny, n, sysFchmodat2, 2, 0o4000, eperm},
		{"fchmodat2/plain/landlock", llDeny, n, sysFchmodat2, 2, 0o600, eperm},
		{"mknodat/setuid", nsDeny, n, unix.SYS_MKNODAT, 2, unix.S_IFREG | 0o4755, eperm},
		{"mknodat/fifo", nsDeny, n, unix.SYS_MKNODAT, 2, unix.S_IFIFO | 0o644, allow},
		{"ptrace/traceme", nsDeny, n, unix.SYS_PTRACE, 0, unix.PTRACE_TRACEME, allow},
		{"ptrace/detach", llDeny, n, unix.SYS_PTRACE, 0, unix.PTRACE_DETACH, allow},
		{"ptrace/attach", nsDeny, n, unix.SYS_PTRACE, 0, unix.PTRACE_ATTACH, eperm},
		{"ptrace/peekdata", llAllow, n, unix.SYS_PTRACE, 0, unix.PTRACE_PEEKDATA, eperm},
		{"socket/namespaces-deny", nsDeny, n, unix.SYS_SOCKET, 0, unix.AF_INET, allow},
		{"socket/landlock-deny", llDeny, n, unix.SYS_SOCKET, 0, unix.AF_INET, eacces},
		{"socket/landlock-deny/unix", llDeny, n, unix.SYS_SOCKET, 0, unix.AF_UNIX, eacces},
		{"socket/landlock-allow", llAllow, n, unix.SYS_SOCKET, 0, unix.AF_INET, allow},
		{"socketpair/landlock-deny", llDeny, n, unix.SYS_SOCKETPAIR, 0, unix.AF_UNIX, allow},
		{"socket/vsock/namespaces-deny", nsDeny, n, unix.SYS_SOCKET, 0, unix.AF_VSOCK, eafnosupport},
		{"socket/vsock/landlock-allow", llAllow, n, unix.SYS_SOCKET, 0, unix.AF_VSOCK, eafnosupport},
		{"socketpair/inet/namespaces-allow", nsAllow, n, unix.SYS_SOCKETPAIR, 0, unix.AF_INET, eafnosupport},
		{"socketpair/vsock/landlock-deny", llDeny, n, unix.SYS_SOCKETPAIR, 0, unix.AF_VSOCK, eafnosupport},
		{"ioctl/setflags/landlock", llDeny, n, unix.SYS_IOCTL, 1, unix.FS_IOC_SETFLAGS, eperm},
		{"ioctl/setflags32/landlock", llAllow, n, unix.SYS_IOCTL, 1, fsIOC32SetFlags, eperm},
		{"ioctl/fssetxattr/landlock", llDeny, n, unix.SYS_IOCTL, 1, fsIOCFSSetXattr, eperm},
		{"ioctl/tcgets/landlock", llDeny, n, unix.SYS_IOCTL, 1, unix.TCGETS, allow},
		{"ioctl/setflags/namespaces", nsDeny, n, unix.SYS_IOCTL, 1, unix.FS_IOC_SETFLAGS, allow},
	}
	return append(cases, anyArgsCases()...)
}

// anyArgCall is a system call whose verdict does not depend on its
// arguments, with its verdict under the namespaces and the landlock
// filters.
type anyArgCall struct {
	name         string
	nr           uintptr
	ns, landlock string
}

// anyArgsCases checks each system call whose verdict does not depend on
// its arguments under every mode, named "call/isolation-net".
func anyArgsCases() []seccompCase {
	var cases []seccompCase
	for _, c := range []anyArgCall{
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, eperm, eperm},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, eperm, eperm},
		{"keyctl", unix.SYS_KEYCTL, eperm, eperm},
		{"add_key", unix.SYS_ADD_KEY, eperm, eperm},
		{"request_key", unix.SYS_REQUEST_KEY, eperm, eperm},
		{"memfd_create", unix.SYS_MEMFD_CREATE, eperm, eperm},
		{"shmget", unix.SYS_SHMGET, eperm, eperm},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, eacces, eacces},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, eacces, eacces},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, eacces, eacces},
		// Owner, times and extended attributes: Landlock cannot confine
		// them, so the landlock filters refuse them.
		{"fchown", unix.SYS_FCHOWN, allow, eperm},
		{"fchownat", unix.SYS_FCHOWNAT, allow, eperm},
		{"utimensat", unix.SYS_UTIMENSAT, allow, eperm},
		{"setxattr", unix.SYS_SETXATTR, allow, eperm},
		{"lsetxattr", unix.SYS_LSETXATTR, allow, eperm},
		{"fsetxattr", unix.SYS_FSETXATTR, allow, eperm},
		{"removexattr", unix.SYS_REMOVEXATTR, allow, eperm},
		{"lremovexattr", unix.SYS_LREMOVEXATTR, allow, eperm},
		{"fremovexattr", unix.SYS_FREMOVEXATTR, allow, eperm},
		{"setxattrat", sysSetxattrat, allow, eperm},
		{"removexattrat", sysRemovexattrat, allow, eperm},
		// Counters a landlock isolation cannot cap (no user namespace).
		{"inotify_init1", unix.SYS_INOTIFY_INIT1, allow, enosys},
		{"fanotify_init", unix.SYS_FANOTIFY_INIT, allow, enosys},
	} {
		for _, m := range seccompModes {
			want := c.ns
			if m.iso == IsolationLandlock {
				want = c.landlock
			}
			cases = append(cases, seccompCase{c.name + "/" + string(m.iso) + "-" + string(m.net), m, seccompArch, c.nr, 0, 0, want})
		}
	}
	return cases
}

// TestSeccompProgramVerdicts runs each case through the compiled filter
// of its mode, in the interpreter.
func TestSeccompProgramVerdicts(t *testing.T) {
	for _, c := range append(seccompCases(), legacyCases()...) {
		t.Run(c.name, func(t *testing.T) {
			d := seccompData{nr: int32(c.nr), arch: c.arch}
			d.args[c.arg] = c.val
			prog := compileFilter(filterFor(c.mode.iso, c.mode.net))
			if got := verdict(bpfRun(t, prog, d.bytes())); got != c.want {
				t.Fatalf("%s: nr %d arg%d=%#o on arch %#x: %s, want %s", c.mode, c.nr, c.arg, c.val, c.arch, got, c.want)
			}
		})
	}
}

// TestSeccompCasesCoverEveryRule: every rule of filterFor is exercised,
// with its verdict, by a case of a mode whose filter has that rule, so a
// rule added to the filter needs a row in the tables.
func TestSeccompCasesCoverEveryRule(t *testing.T) {
	type key struct {
		nr      uintptr
		verdict string
	}
	modesOf := map[key]map[seccompMode]bool{}
	var keys []key
	for _, m := range seccompModes {
		for _, r := range filterFor(m.iso, m.net) {
			k := key{r.nr, verdict(r.ret)}
			if modesOf[k] == nil {
				modesOf[k] = map[seccompMode]bool{}
				keys = append(keys, k)
			}
			modesOf[k][m] = true
		}
	}
	cases := append(seccompCases(), legacyCases()...)
	for _, k := range keys {
		covered := false
		for _, c := range cases {
			if c.nr == k.nr && c.want == k.verdict && c.arch == seccompArch && modesOf[k][c.mode] {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("no case shows system call %d answering %s in a mode whose filter refuses it", k.nr, k.verdict)
		}
	}
}
