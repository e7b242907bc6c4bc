//go:build linux && !amd64 && !arm64

package sandbox

const sysFchmodat2 = 452

var legacyRules []sysRule
