//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// legacyCases cover amd64's older system calls (legacyRules and
// legacyMetaCalls).
func legacyCases() []seccompCase {
	n := seccompArch
	return []seccompCase{
		{"open/plain-mode", nsDeny, n, unix.SYS_OPEN, 2, 0o644, allow},
		{"open/setuid-mode", nsDeny, n, unix.SYS_OPEN, 2, 0o4755, eperm},
		{"open/setuid-mode/landlock", llDeny, n, unix.SYS_OPEN, 2, 0o4755, eperm},
		{"creat/setgid-mode", nsAllow, n, unix.SYS_CREAT, 1, 0o2755, eperm},
		{"creat/plain-mode", nsAllow, n, unix.SYS_CREAT, 1, 0o644, allow},
		{"mknod/setuid", nsDeny, n, unix.SYS_MKNOD, 1, unix.S_IFREG | 0o4755, eperm},
		{"chmod/setuid", nsDeny, n, unix.SYS_CHMOD, 1, 0o4755, eperm},
		{"chmod/setuid/landlock", llDeny, n, unix.SYS_CHMOD, 1, 0o4755, eperm},
		{"chmod/plain", nsProxy, n, unix.SYS_CHMOD, 1, 0o644, allow},
		{"chmod/plain/landlock", llAllow, n, unix.SYS_CHMOD, 1, 0o644, eperm},
		{"chown/landlock", llDeny, n, unix.SYS_CHOWN, 0, 0, eperm},
		{"lchown/landlock", llAllow, n, unix.SYS_LCHOWN, 0, 0, eperm},
		{"lchown/namespaces", nsDeny, n, unix.SYS_LCHOWN, 0, 0, allow},
		{"utime/landlock", llDeny, n, unix.SYS_UTIME, 0, 0, eperm},
		{"utimes/landlock", llDeny, n, unix.SYS_UTIMES, 0, 0, eperm},
		{"futimesat/landlock", llAllow, n, unix.SYS_FUTIMESAT, 0, 0, eperm},
		{"inotify_init/landlock", llDeny, n, unix.SYS_INOTIFY_INIT, 0, 0, enosys},
		{"inotify_init/namespaces", nsDeny, n, unix.SYS_INOTIFY_INIT, 0, 0, allow},
	}
}
