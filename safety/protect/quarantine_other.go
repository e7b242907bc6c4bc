//go:build !linux

package protect

import (
	"fmt"
	"io"
)

// RunQuarantineCommand is `terminald quarantine`; off Linux nothing is
// quarantined (protected paths are checked on Linux only).
func RunQuarantineCommand(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "terminald quarantine: protected paths are checked on Linux only; nothing is quarantined here")
	return 2
}
