package sandbox

import (
	"os"
	"testing"
)

// BenchmarkWatchTickExtra is what the memory and disk counts add to one
// watchdog tick for a command of one process: statfs of /dev/shm, the
// sock_diag dumps, and the /proc/PID/io reads. Run in the host's network
// namespace, it is the dearer case of network = "allow" (the command's
// descriptors are read and, every tcpEvery ticks, the host's TCP table
// walked); under `unshare -n` it is the common case of a network namespace
// of the command's own.
func BenchmarkWatchTickExtra(b *testing.B) {
	w := newMemWatch(&helperConfig{Isolation: IsolationNamespaces, Net: NetAllow})
	d := newDiskWatch()
	pids := []int{os.Getpid()}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = w.hiddenKB(pids)
		_ = d.total(pids)
	}
}
