//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// sysFchmodat2 is fchmodat2(2) (Linux 6.6), the same number on every architecture.
const sysFchmodat2 = 452

// setxattrat(2) and removexattrat(2) (Linux 6.13), the same numbers everywhere.
const (
	sysSetxattrat    = 463
	sysRemovexattrat = 466
)

// legacyRules cover the older system calls amd64 still has: chmod, open,
// creat and mknod carry the mode in a different argument.
var legacyRules = []sysRule{
	{nr: unix.SYS_CHMOD, arg: 1, mask: setIDs, ret: retEPERM},
	{nr: unix.SYS_OPEN, arg: 2, mask: setIDs, ret: retEPERM},
	{nr: unix.SYS_CREAT, arg: 1, mask: setIDs, ret: retEPERM},
	{nr: unix.SYS_MKNOD, arg: 1, mask: setIDs, ret: retEPERM},
}

// legacyInotify is amd64's older inotify_init (landlock isolation).
var legacyInotify = []uintptr{unix.SYS_INOTIFY_INIT}

// legacyMetaCalls are amd64's older metadata calls (landlock isolation).
var legacyMetaCalls = []uintptr{unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT}
