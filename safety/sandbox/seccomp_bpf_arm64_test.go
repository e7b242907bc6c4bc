//go:build linux

package sandbox

// legacyCases is empty: arm64 has only the *at system calls.
func legacyCases() []seccompCase { return nil }
