//go:build unix

package risk

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the test process has used,
// all threads included; ok is false where it cannot be read.
func processCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
