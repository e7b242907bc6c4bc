//go:build linux

package sandbox

// sysFchmodat2 is fchmodat2(2) (Linux 6.6), the same number on every architecture.
const sysFchmodat2 = 452

// legacyRules is empty: arm64 has only the *at system calls.
var legacyRules []sysRule
