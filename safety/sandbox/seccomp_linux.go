package sandbox

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Landlock's TCP rights do not cover Multipath TCP: an MPTCP socket talks to
// plain TCP endpoints, yet since the kernel excluded MPTCP from the TCP
// rights its bind and connect are not checked (landlock-lsm/linux#54; Go
// 1.24+ listeners use MPTCP by default). SCTP can connect and bind through
// setsockopt, which Landlock does not see either (landlock-lsm/linux#40).
//
// So when the network is denied, a small seccomp filter is installed on the
// same thread as the Landlock domain, before the fork: socket(2) with
// protocol IPPROTO_MPTCP or IPPROTO_SCTP fails with EACCES; io_uring_setup
// fails too, since io_uring can create sockets without socket(2); and system
// calls of another ABI (i386 or x32 on amd64, arm32 on arm64) fail with
// ENOSYS, so the filter cannot be sidestepped by a compat entry point.

// seccompArch is the audit architecture of the filter's target, 0 where no
// filter is provided (the gap is then stated in the confinement).
var seccompArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}[runtime.GOARCH]

// Offsets in struct seccomp_data (little-endian: args' low halves).
const (
	seccompNR    = 0
	seccompArchO = 4
	seccompArg2  = 16 + 2*8
	x32Bit       = 0x40000000
)

func bpfStmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// netFilter returns the classic BPF program described above.
func netFilter() []unix.SockFilter {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		nosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	return []unix.SockFilter{
		/* 0 */ bpfStmt(ld, seccompArchO),
		/* 1 */ bpfJump(jeq, seccompArch, 0, 9), // foreign ABI -> 11
		/* 2 */ bpfStmt(ld, seccompNR),
		/* 3 */ bpfJump(jge, x32Bit, 7, 0), // x32 -> 11
		/* 4 */ bpfJump(jeq, uint32(unix.SYS_IO_URING_SETUP), 5, 0), // -> 10
		/* 5 */ bpfJump(jeq, uint32(unix.SYS_SOCKET), 0, 3), // not socket -> 9
		/* 6 */ bpfStmt(ld, seccompArg2),
		/* 7 */ bpfJump(jeq, unix.IPPROTO_MPTCP, 2, 0), // -> 10
		/* 8 */ bpfJump(jeq, unix.IPPROTO_SCTP, 1, 0), // -> 10
		/* 9 */ bpfStmt(ret, allow),
		/* 10 */ bpfStmt(ret, deny),
		/* 11 */ bpfStmt(ret, nosys),
	}
}

// installNetFilter applies netFilter to the calling thread only (no TSYNC).
// no_new_privs must already be set on it.
func installNetFilter() error {
	prog := netFilter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	if err != nil {
		return result.Wrap(result.InternalError, errSetup+": the network system-call filter could not be installed", err)
	}
	return nil
}
