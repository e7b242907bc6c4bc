package sandbox

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
)

// A helper serves commands one after another (issue 19). Starting one
// (re-executing this binary, the Go runtime's start, the namespaces, the
// view, the Landlock ruleset and the confined forker) costs about 13 ms
// of CPU; a command in a helper that is already set up costs a fork and
// an exec. Prepared helpers alone moved that start off the request path
// only while calls left the server idle time: back to back, or in bursts,
// calls waited for helpers being started.
//
// A helper is reused only when nothing of its last command can reach the
// next one, and it is never shared by two commands at once (the server
// takes it out of the parked list for the run). Between two commands:
//
//   - every process of the PID namespace is dead and reaped: the helper
//     answers only after wait4 found no child left, having sent SIGKILL to
//     every process of the namespace (kill(-1) from its first process)
//     when the command ended and any was left (childrenLeft);
//   - the IPC namespace holds no System V message queue, semaphore set or
//     shared memory segment, and no POSIX message queue (resetForNext
//     removes them and checks that none is left);
//   - the view's /dev/shm is empty (same);
//   - HOME and TMPDIR are emptied by the server before the pair is handed
//     out again (runner.recycle; runner.giveBack hands a pair out at once
//     only when both are still empty); a pair whose directories had to be made
//     anew is another key, and its helper is ended (takeParked);
//   - the limits, peaks, looked-up names and cancellation start afresh.
//
// What the namespaces hold that no command can change (the mounts of the
// view, the loopback, the resolver and the proxy relay, the counters of
// the user namespace) is kept: that is the saving. The network namespace's
// sockets close with their processes. A command cannot change the view
// (it has no capability, and the seccomp filter and Landlock apply), and
// /proc/sys is read-only in it.
//
// A helper is not reused after a run that hit a limit, was cancelled or
// stopped, timed out, had a terminal, stdin or published ports (sessions),
// with landlock isolation (whose helper shares the host's namespaces), or
// after its run limit (runLimit).

// maxRuns is the mean number of commands one helper serves. Each end
// costs a helper's start (about 13 ms of CPU) on the machine while calls
// go on, which slows the next two to four calls: with a mean of 256,
// four primed helpers back to back made that about one call in a
// hundred, enough to reach the p99 (2.9-3.2 ms, against 2.2 ms with
// 1,024; 2,000 and 6,000 calls, everything on a tmpfs). A
// helper's own memory levels off after a few hundred commands (about
// 5 MB anonymous, the Go runtime's first heap target), so a longer life
// holds no more.
const maxRuns = 1024

// runLimit draws how many commands a new helper serves: between maxRuns/2
// and 3*maxRuns/2, uniformly. Helpers prepared together serve alternately,
// so a fixed limit had every one of them end within the same few calls
// (with 256: the 1,021st to 1,026th of a server with four primed pairs,
// 3-14 ms each where the others took 1.5 ms, each such call starting a
// helper on the request path or sharing the CPUs with one starting);
// drawn, they end one at a time, hundreds of calls apart, and another is
// prepared off the request path meanwhile.
func runLimit() int { return maxRuns/2 + rand.IntN(maxRuns+1) }

// setupReuse makes what resetForNext needs: a detached mount of the IPC
// namespace's message queue file system (never attached to the view: the
// command cannot see it). Without it the helper serves one command only.
func (h *helper) setupReuse() error {
	if h.cfg.Isolation != IsolationNamespaces {
		return nil
	}
	fs, err := unix.Fsopen("mqueue", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil
	}
	defer unix.Close(fs)
	if unix.FsconfigCreate(fs) != nil {
		return nil
	}
	if m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, 0); err == nil {
		h.mq = m
	}
	return nil
}

// closeOutput closes the helper's copies of the command's output
// descriptors: the server reads to their end once the command's
// processes are gone.
func (h *helper) closeOutput() {
	for _, fd := range []*int{&h.outFD, &h.errFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// reusable reports whether the helper may serve another command after
// the one that ended with r (its runs-th).
func (h *helper) reusable(r helperResult, runs int) bool {
	h.mu.Lock()
	cancelled := h.cancelled
	h.mu.Unlock()
	return h.cfg.Isolation == IsolationNamespaces && h.mq >= 0 && runs < h.runLimit &&
		r.Started && r.Limit == "" && !r.Cancelled && !cancelled &&
		!h.run.TTY && !h.run.Stdin && !h.run.Publish
}

// resetForNext removes what the last command left in the namespaces (see
// above) and starts the run's records afresh. false: something could not
// be removed, and the helper serves no other command.
func (h *helper) resetForNext() bool {
	if !clearSysV() || (!h.emptyDirs() && (!h.clearMqueues() || !clearDir("/dev/shm"))) {
		return false
	}
	h.mu.Lock()
	h.limit, h.cancelled, h.peakTasks, h.peakRSSKB = "", false, 0, 0
	h.mu.Unlock()
	h.dns.reset()
	return true
}

// clearSysV removes every System V IPC object of the helper's IPC
// namespace (/proc/sysvipc lists them: the view's /proc is the helper's
// own, of its namespaces) and reports whether none is left.
func clearSysV() bool {
	for _, k := range []struct {
		file  string
		inUse func() (int, bool)
		rm    func(id int) error
	}{
		{"/proc/sysvipc/msg", func() (int, bool) { return sysvInUse(unix.SYS_MSGCTL, ipcMsgInfo, 0) }, func(id int) error {
			_, _, e := unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
			return errnoErr(e)
		}},
		{"/proc/sysvipc/sem", func() (int, bool) { return sysvInUse(unix.SYS_SEMCTL, ipcSemInfo, 7) }, func(id int) error {
			_, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
			return errnoErr(e)
		}},
		{"/proc/sysvipc/shm", func() (int, bool) { return sysvInUse(unix.SYS_SHMCTL, ipcShmInfo, 0) }, func(id int) error {
			_, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			return err
		}},
	} {
		if n, ok := k.inUse(); ok && n == 0 {
			continue // none: /proc/sysvipc is read only when some are
		}
		for pass := 0; ; pass++ {
			ids, ok := sysvIDs(k.file)
			if !ok {
				return false
			}
			if len(ids) == 0 {
				break
			}
			if pass == 2 {
				return false
			}
			for _, id := range ids {
				_ = k.rm(id)
			}
		}
	}
	return true
}

// The *_INFO commands of msgctl, semctl and shmctl (linux/msg.h, sem.h,
// shm.h): each fills a structure whose int at the index sysvInUse is given
// counts the objects of its kind in the caller's IPC namespace (msgpool,
// semusz, used_ids).
const (
	ipcMsgInfo = 12
	ipcShmInfo = 14
	ipcSemInfo = 19
)

// sysvInUse asks the kernel, with one system call, how many System V
// objects of a kind the IPC namespace holds: reading the three
// /proc/sysvipc files after every command was half of a kept helper's
// clearing. ok is false where the call fails (the caller then reads
// /proc).
func sysvInUse(nr uintptr, cmd uintptr, index int) (int, bool) {
	var info [16]int32 // msginfo and seminfo are ints; shm_info starts with one
	var e unix.Errno
	if nr == unix.SYS_SEMCTL {
		_, _, e = unix.Syscall6(nr, 0, 0, cmd, uintptr(unsafe.Pointer(&info[0])), 0, 0)
	} else {
		_, _, e = unix.Syscall(nr, 0, cmd, uintptr(unsafe.Pointer(&info[0])))
	}
	if e != 0 {
		return 0, false
	}
	return int(info[index]), true
}

func errnoErr(e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// sysvIDs reads the ids (second column) of a /proc/sysvipc file.
func sysvIDs(file string) ([]int, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	var ids []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for first := true; sc.Scan(); first = false {
		if first {
			continue // the header
		}
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		id, err := strconv.Atoi(string(f[1]))
		if err != nil {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// emptyDirs reports whether the message queue mount and the view's
// /dev/shm are both empty, read with an lseek and two getdents64 each
// (fsx.DirEmptyAt) on descriptors opened at the first clearing and kept: the clearing itself
// (clearMqueues, clearDir) opened, read and closed both through os.File,
// a third of a kept helper's clearing when nothing was left, which is
// nearly always. false (something left, or a descriptor or read failed)
// has the caller clear them the long way.
func (h *helper) emptyDirs() bool {
	if h.mq < 0 {
		return false
	}
	if h.mqDir < 0 {
		fd, err := unix.Openat(h.mq, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		h.mqDir = fd
	}
	if h.shmDir < 0 {
		fd, err := unix.Open("/dev/shm", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		h.shmDir = fd
	}
	return fsx.DirEmptyAt(h.mqDir) && fsx.DirEmptyAt(h.shmDir)
}

// clearMqueues unlinks every POSIX message queue of the IPC namespace
// through the helper's detached mqueue mount.
func (h *helper) clearMqueues() bool {
	if h.mq < 0 {
		return false
	}
	fd, err := unix.Openat(h.mq, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	d := os.NewFile(uintptr(fd), "mqueue")
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	for _, n := range names {
		if unix.Unlinkat(fd, n, 0) != nil {
			return false
		}
	}
	return true
}

// clearDir removes everything in dir (a tmpfs of the view) and reports
// whether it is empty.
func clearDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return os.IsNotExist(err)
	}
	for _, e := range ents {
		if os.RemoveAll(dir+"/"+e.Name()) != nil {
			return false
		}
	}
	left, err := os.ReadDir(dir)
	return err == nil && len(left) == 0
}
