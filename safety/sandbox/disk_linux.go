package sandbox

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// The disk limit (Limits.DiskMB, [terminal.limits] disk_mb). The kernel's
// per-task I/O accounting counts, in write_bytes, every byte a task makes
// dirty in a file's page cache (write(2), a written mmap, fallocate'd
// extents are not), and in cancelled_write_bytes what it dirtied that was
// dropped before reaching the disk (a file removed or truncated while its
// pages were still dirty). A task's counts pass to its parent's when it is
// reaped, so the helper's own /proc/self/io holds every reaped process of
// the command (the helper is the reaper of them all: PID 1 of the command's
// namespace, or its subreaper with landlock isolation), and the live ones
// have their own /proc/PID/io. The watchdog sums both, less the helper's own
// count when the command started, every other tick (50 ms), and ends every
// process once the total passes disk_mb.
//
// What it counts is the bytes written, not the growth of the file systems:
//   - over: a file rewritten counts each time (measured: a 1 MiB file
//     rewritten ten times counts 10 MiB, 1 MiB cancelled), and so does a
//     file written then removed after its pages reached the disk
//     (dirty_expire, 30 s by default);
//   - under: files on a tmpfs (memory: counted against memory_mb where the
//     view's /dev/shm or the memory cgroup sees them), and space taken
//     without writing (a sparse or fallocate'd file; RLIMIT_FSIZE bounds
//     each file to max_file_mb);
//   - measured: 100 files of 1 MiB count 100 MiB; removing 50 of them at
//     once cancels 50 MiB.
//
// The watchdog's tick bounds the overshoot: what the command writes in 50
// ms past the limit.

// diskWatch sums the bytes the command has written.
type diskWatch struct {
	base int64 // the helper's own count when the command started
	buf  []byte
}

func newDiskWatch() *diskWatch {
	d := &diskWatch{buf: make([]byte, 512)}
	d.base = d.written("self")
	return d
}

// written is write_bytes less cancelled_write_bytes of /proc/<pid>/io.
func (d *diskWatch) written(pid string) int64 {
	fd, err := unix.Open("/proc/"+pid+"/io", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	n, _ := unix.Read(fd, d.buf)
	unix.Close(fd)
	if n <= 0 {
		return 0
	}
	return ioField(d.buf[:n], "write_bytes: ") - ioField(d.buf[:n], "cancelled_write_bytes: ")
}

// ioField reads one "name: N" line of /proc/PID/io.
func ioField(b []byte, name string) int64 {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte(name)); ok {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	return 0
}

// total is what the command has written: its reaped processes (in the
// helper's own count) and the live ones, pids.
func (d *diskWatch) total(pids []int) int64 {
	t := d.written("self") - d.base
	for _, p := range pids {
		t += d.written(strconv.Itoa(p))
	}
	return t
}
