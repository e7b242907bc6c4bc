//go:build !unix

package sandbox

// lockFile never reports a lock free off Unix: ClaimRunsDir then removes
// no other server's directory (abandoned ones stay until removed by hand)
// and its own claim is not locked.
func lockFile(string) (unlock func(), ok bool) { return nil, false }

// lockSupported: no flock here.
const lockSupported = false
