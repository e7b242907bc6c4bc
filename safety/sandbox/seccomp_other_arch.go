//go:build linux && !amd64

package sandbox

// sysFchmodat2 is fchmodat2(2) (Linux 6.6), the same number on every architecture.
const sysFchmodat2 = 452

// setxattrat(2) and removexattrat(2) (Linux 6.13), the same numbers everywhere.
const (
	sysSetxattrat    = 463
	sysRemovexattrat = 466
)

// legacyRules is empty: arm64 (and the architectures without a filter)
// have only the *at system calls.
var legacyRules []sysRule

// legacyInotify is empty for the same reason.
var legacyInotify []uintptr

// legacyMetaCalls is empty for the same reason.
var legacyMetaCalls []uintptr
