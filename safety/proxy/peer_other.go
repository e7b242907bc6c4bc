//go:build !linux

package proxy

import "net"

// peerPID is 0 off Linux: refusals are not attributed to a process.
func peerPID(net.Conn) int { return 0 }
