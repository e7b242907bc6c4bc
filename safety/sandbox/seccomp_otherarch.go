//go:build linux && !amd64 && !arm64

package sandbox

const sysFchmodat2 = 452

// setxattrat(2) and removexattrat(2) (Linux 6.13), the same numbers everywhere.
const (
	sysSetxattrat    = 463
	sysRemovexattrat = 466
)

var legacyRules []sysRule

var legacyMetaCalls []uintptr
