//go:build !linux

package mcpkit

import "os"

// stdin is standard input, read as it is (see stdin_linux.go).
func stdin() *os.File { return os.Stdin }
