package sandbox

import (
	"errors"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Probe returns the kernel's Landlock ABI version, or 0 when Landlock is
// not built in or not enabled at boot. An error is returned only for an
// unexpected answer from the kernel (the ABI is then 0 too).
func Probe() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		if errno == unix.ENOSYS || errno == unix.EOPNOTSUPP {
			return 0, nil
		}
		return 0, errno
	}
	return int(v), nil
}

// filterAvailable reports whether this architecture has the seccomp filter.
func filterAvailable() bool { return seccompArch != 0 }

// Filesystem access rights, grouped by the ABI that introduced them.
const (
	fsABI1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM

	// Rights that a rule on a non-directory may carry.
	fsFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// Read-only trees: read and execute.
	fsRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR

	// Writable trees: everything except execute (nothing written by the
	// child can be executed), device nodes (root could otherwise mknod a
	// disk), device ioctls and UNIX-socket resolution.
	fsWrite = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER

	// /dev/null: read, write, truncate (shells open it with O_TRUNC) and
	// terminal probes such as isatty.
	fsDevNull = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS is the set of filesystem rights the ruleset denies by default
// at a given ABI: each version adds the rights it introduced.
func handledFS(abi int) uint64 {
	h := uint64(fsABI1)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		// Connecting to pathname UNIX sockets created outside the domain.
		h |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return h
}

// rulesetAttr builds the ruleset attributes for abi. TCP is handled (and,
// with no port rule, denied) only when denyTCP and the ABI has it; scoping
// is used whenever the ABI has it.
func rulesetAttr(abi int, denyTCP bool) unix.LandlockRulesetAttr {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handledFS(abi)}
	if abi >= 4 && denyTCP {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return attr
}

const errSetup = "the sandbox could not be set up"

// buildRuleset creates a Landlock ruleset for s at abi and returns its fd.
// The caller closes it. view says the command runs in the namespaces'
// view, whose /proc is its own PID namespace's and may be read; in the
// host's namespaces /proc is left out (it would show every process).
// TCP is denied by Landlock only in the host's network namespace with the
// network denied; with namespaces the command's own network namespace is
// the wall, and its loopback stays usable.
func buildRuleset(s *Spec, abi int, view bool) (int, error) {
	attr := rulesetAttr(abi, !view && s.net() == NetDeny)
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	runtime.KeepAlive(&attr)
	if errno != 0 {
		return -1, result.Wrap(result.InternalError, errSetup, errno)
	}
	rs := int(fd)
	handled := attr.Handled_access_fs
	add := func(path string, access uint64, mustExist bool) error {
		err := addPathRule(rs, path, access&handled)
		if err != nil && !mustExist && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	write := uint64(fsWrite)
	if s.ExecWritable {
		write |= unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	for _, p := range append([]string{s.JailRoot, s.TempDir, s.HomeDir}, s.WritePaths...) {
		if err := add(p, write, true); err != nil {
			unix.Close(rs)
			return -1, result.Wrap(result.InternalError, errSetup+": a writable directory could not be opened", err)
		}
	}
	if err := add("/dev/null", fsDevNull, true); err != nil {
		unix.Close(rs)
		return -1, result.Wrap(result.InternalError, errSetup+": /dev/null could not be opened", err)
	}
	reads := s.ReadPaths
	if len(reads) == 0 {
		reads = DefaultReadPaths
	}
	if view {
		reads = append(slices.Clone(reads), "/proc", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
		if err := add("/dev/shm", fsWrite, false); err != nil {
			unix.Close(rs)
			return -1, result.Wrap(result.InternalError, errSetup+": /dev/shm could not be opened", err)
		}
		if err := add("/dev/full", unix.LANDLOCK_ACCESS_FS_WRITE_FILE, false); err != nil {
			unix.Close(rs)
			return -1, result.Wrap(result.InternalError, errSetup+": /dev/full could not be opened", err)
		}
	}
	for _, p := range reads {
		if err := add(p, fsRead, false); err != nil {
			unix.Close(rs)
			return -1, result.Wrap(result.InternalError, errSetup+": a read-only path could not be opened", err)
		}
	}
	return rs, nil
}

// addPathRule allows access beneath path (following symlinks in path
// itself, so /bin names the tree it points to). On a non-directory only the
// file rights are kept, as the kernel requires.
func addPathRule(rs int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fsFileRights
	}
	if access == 0 {
		return nil
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	runtime.KeepAlive(&rule)
	if errno != 0 {
		return errno
	}
	return nil
}
