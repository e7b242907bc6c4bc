//go:build unix

package journal

import (
	"os"
	"syscall"

	"github.com/bastion-mcp/bastion/safety/result"
)

// lockFile takes an exclusive, non-blocking flock on path; the kernel drops
// it when the process dies, however it dies.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, result.Wrap(result.OperationFailed, "the journal's lock file cannot be opened", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, ErrBusy
	}
	return func() { f.Close() }, nil
}
