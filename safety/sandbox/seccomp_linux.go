package sandbox

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// The seccomp filter is the third wall, installed on the thread that starts
// the command (never on the server), after no_new_privs and before the
// Landlock domain. It refuses, in every mode:
//
//   - setting a set-user-ID or set-group-ID bit: chmod, fchmod, fchmodat,
//     fchmodat2, and open, openat, creat and mknod(at) whose mode carries
//     S_ISUID or S_ISGID fail with EPERM (openat2, whose mode sits in a
//     structure a filter cannot read, fails with ENOSYS so that callers
//     fall back to openat). Nothing the command leaves behind can be a
//     setuid program, whoever later runs it;
//   - ptrace (but PTRACE_TRACEME and PTRACE_DETACH, with which the
//     helper holds a new command until its limits are set; a process
//     inside can let its parent trace it, and the parent can do nothing
//     with that), process_vm_readv and process_vm_writev (EPERM);
//   - io_uring (EACCES), whose operations a filter does not see;
//   - the kernel keyring calls keyctl, add_key and request_key (EPERM);
//   - system calls of another ABI (i386 or x32 on amd64, arm32 on arm64),
//     which fail with ENOSYS so the filter cannot be sidestepped by a
//     compatibility entry point.
//
// It lets socket(2) create only the families the namespaces isolate
// (AF_UNIX, AF_INET, AF_INET6, and AF_NETLINK with NETLINK_ROUTE) and
// socketpair(2) only AF_UNIX; any other family (AF_VSOCK, AF_PACKET,
// AF_ALG, other netlink protocols...) fails with EAFNOSUPPORT (see
// sockfamily_linux.go).
//
// With landlock isolation and the network denied it also refuses every
// socket(2) with EACCES (AF_UNIX socketpair(2) stays allowed): Landlock alone does
// not restrict UDP, raw sockets, pathname or abstract UNIX sockets outside
// its scope, MPTCP (landlock-lsm/linux#54) or SCTP's connect through
// setsockopt (landlock-lsm/linux#40). With namespaces the network
// namespace is that wall instead, so sockets stay usable on the command's
// own loopback.

// fsIOC32SetFlags is FS_IOC32_SETFLAGS, the 32-bit spelling of chattr's ioctl.
const fsIOC32SetFlags = 0x40046602

// fsIOCFSSetXattr is FS_IOC_FSSETXATTR (project id and the same flags).
const fsIOCFSSetXattr = 0x401c5820

// seccompArch is the audit architecture of the filter's target, 0 where no
// filter is provided (the confinement string then leaves "seccomp" out).
var seccompArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}[runtime.GOARCH]

// Offsets in struct seccomp_data (little-endian: an argument's low half).
const (
	seccompNR    = 0
	seccompArchO = 4
	x32Bit       = 0x40000000
)

func argOffset(i int) uint32 { return uint32(16 + 8*i) }

// sysRule is one line of the filter: system call nr returns ret, either
// always (mask 0) or when argument arg has any bit of mask set.
type sysRule struct {
	nr    uintptr
	arg   int
	mask  uint32
	allow []uint32 // when set: these values of the argument are allowed, any other returns ret
	deny  []uint32 // when set: these values of the argument return ret, any other is allowed
	// narrow (with allow): further values allowed only when another
	// argument is one of a list (sockfamily_linux.go).
	narrow []narrowing
	ret    uint32
}

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retEACCE = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	setIDs   = unix.S_ISUID | unix.S_ISGID
)

// filterFor returns the rules for a run.
func filterFor(iso Isolation, net NetMode) []sysRule {
	rules := []sysRule{
		{nr: unix.SYS_FCHMOD, arg: 1, mask: setIDs, ret: retEPERM},
		{nr: unix.SYS_FCHMODAT, arg: 2, mask: setIDs, ret: retEPERM},
		{nr: unix.SYS_OPENAT, arg: 3, mask: setIDs, ret: retEPERM},
		{nr: unix.SYS_MKNODAT, arg: 2, mask: setIDs, ret: retEPERM},
		{nr: sysFchmodat2, arg: 2, mask: setIDs, ret: retEPERM},
		{nr: unix.SYS_OPENAT2, ret: retNOSYS},
		// Only PTRACE_TRACEME and PTRACE_DETACH: the helper holds each new
		// command stopped at its exec while it sets the limits.
		{nr: unix.SYS_PTRACE, arg: 0, allow: []uint32{unix.PTRACE_TRACEME, unix.PTRACE_DETACH}, ret: retEPERM},
		{nr: unix.SYS_PROCESS_VM_READV, ret: retEPERM},
		{nr: unix.SYS_PROCESS_VM_WRITEV, ret: retEPERM},
		{nr: unix.SYS_IO_URING_SETUP, ret: retEACCE},
		{nr: unix.SYS_IO_URING_ENTER, ret: retEACCE},
		{nr: unix.SYS_IO_URING_REGISTER, ret: retEACCE},
		{nr: unix.SYS_KEYCTL, ret: retEPERM},
		// Memory that no process maps is in no resident set, so the
		// watchdog could not see it: anonymous memory files and System V
		// shared memory are refused (POSIX shared memory is files in the
		// size-capped /dev/shm).
		{nr: unix.SYS_MEMFD_CREATE, ret: retEPERM},
		{nr: unix.SYS_SHMGET, ret: retEPERM},
		{nr: unix.SYS_ADD_KEY, ret: retEPERM},
		{nr: unix.SYS_REQUEST_KEY, ret: retEPERM},
	}
	rules = append(rules, legacyRules...)
	if iso == IsolationLandlock && net == NetDeny {
		rules = append(rules, sysRule{nr: unix.SYS_SOCKET, ret: retEACCE},
			sysRule{nr: unix.SYS_SOCKETPAIR, arg: 0, allow: []uint32{unix.AF_UNIX}, ret: retNoFamily})
	} else {
		rules = append(rules, familyRules()...)
	}
	if iso == IsolationLandlock {
		// Landlock (through ABI 7) does not govern a file's metadata, and
		// without a mount view every host file is reachable by path:
		// changing modes, owners, times and extended attributes is refused
		// everywhere, so programs that set them (git init, tar -x, touch
		// of an existing file, cp -p) fail in this mode. (With namespaces
		// the view is the wall, and none of this is refused.)
		for _, nr := range append([]uintptr{unix.SYS_FCHMOD, unix.SYS_FCHMODAT, sysFchmodat2,
			unix.SYS_FCHOWN, unix.SYS_FCHOWNAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
			unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, sysSetxattrat, sysRemovexattrat,
			unix.SYS_UTIMENSAT},
			legacyMetaCalls...) {
			rules = append(rules, sysRule{nr: nr, ret: retEPERM})
		}
		// Inode flags (chattr: append-only, no-dump, no-atime...) are
		// metadata set through ioctl.
		rules = append(rules, sysRule{nr: unix.SYS_IOCTL, arg: 1,
			deny: []uint32{unix.FS_IOC_SETFLAGS, fsIOC32SetFlags, fsIOCFSSetXattr}, ret: retEPERM})
		// Without a user namespace inotify and fanotify instances cannot
		// be capped: they are refused (counters_linux.go).
		rules = append(rules, counterRules()...)
	}
	return rules
}

func bpfStmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// compileFilter turns rules into a classic BPF program.
func compileFilter(rules []sysRule) []unix.SockFilter {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	prog := []unix.SockFilter{
		bpfStmt(ld, seccompArchO),
		bpfJump(jeq, seccompArch, 1, 0),
		bpfStmt(ret, retNOSYS),
		bpfStmt(ld, seccompNR),
		bpfJump(jge, x32Bit, 0, 1),
		bpfStmt(ret, retNOSYS),
	}
	for _, r := range rules {
		if len(r.narrow) > 0 {
			prog = append(prog, narrowBlock(r)...)
			continue
		}
		if len(r.allow) > 0 {
			// nr == r.nr ? (arg in allow ? allow : ret) : next
			prog = append(prog, valueBlock(r, r.allow, retAllow, r.ret)...)
			continue
		}
		if len(r.deny) > 0 {
			// nr == r.nr ? (arg in deny ? ret : allow) : next
			prog = append(prog, valueBlock(r, r.deny, r.ret, retAllow)...)
			continue
		}
		if r.mask == 0 {
			// nr == r.nr ? ret : next
			prog = append(prog,
				bpfStmt(ld, seccompNR),
				bpfJump(jeq, uint32(r.nr), 0, 1),
				bpfStmt(ret, r.ret))
			continue
		}
		// nr == r.nr ? (arg & mask ? ret : allow) : next
		prog = append(prog,
			bpfStmt(ld, seccompNR),
			bpfJump(jeq, uint32(r.nr), 0, 3),
			bpfStmt(ld, argOffset(r.arg)),
			bpfJump(jset, r.mask, 0, 1),
			bpfStmt(ret, r.ret))
	}
	return append(prog, bpfStmt(ret, retAllow))
}

// valueBlock is the filter block for rule r that returns onMatch when its
// argument equals one of values and onMiss otherwise; any other system
// call falls through to the next block.
func valueBlock(r sysRule, values []uint32, onMatch, onMiss uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	n := len(values)
	b := []unix.SockFilter{
		bpfStmt(ld, seccompNR),
		bpfJump(jeq, uint32(r.nr), 0, uint8(n+3)), // not this call: past the block
		bpfStmt(ld, argOffset(r.arg)),
	}
	for i, v := range values {
		b = append(b, bpfJump(jeq, v, uint8(n-i), 0)) // a match: to onMatch
	}
	return append(b, bpfStmt(ret, onMiss), bpfStmt(ret, onMatch))
}

// installFilter applies the rules to the calling thread only (no TSYNC).
// no_new_privs must already be set on it.
func installFilter(rules []sysRule) error {
	prog := compileFilter(rules)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	if err != nil {
		return result.Wrap(result.InternalError, errSetup+": the system-call filter could not be installed", err)
	}
	return nil
}
