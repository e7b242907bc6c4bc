package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Per-user kernel counters. The kernel counts inotify instances and
// watches, fanotify groups and marks, and namespaces of each kind per user
// and per user namespace, and charges every one up the chain of user
// namespaces: an inotify instance the command creates counts for its user
// in its own namespace and for the server's user in the server's. Left
// alone, a command could take all 128 inotify instances of the server's
// user, and while it ran inotify_init1 failed on the host for that user
// (for a root server: for every root service).
//
// Each counter's maximum is a property of a user namespace, written in its
// /proc/sys/user by a process with CAP_SYS_RESOURCE in it. With namespaces
// isolation the helper is root in the command's own user namespace: before
// the command starts it lowers the maxima there (capCounters), so the
// command, which holds no capability, can take at most that share of the
// server user's counts. A nested user namespace the command might create
// is charged to the command's namespace too, so the cap holds there.
//
// With landlock isolation there is no user namespace to hold a maximum and
// seccomp cannot count, so the filter refuses inotify_init, inotify_init1
// and fanotify_init (ENOSYS: programs fall back to polling, as on a kernel
// without inotify); the namespace counters stay uncapped there (a known
// weaker point, stated in the confinement and in docs/terminald.md).

// userCounter is one counter of /proc/sys/user and the ceiling of its cap:
// the command gets the lower of the ceiling and a quarter of the server's
// own maximum (at least 1).
type userCounter struct {
	name    string
	ceiling int64
}

// userCounters are the counters capped in the command's user namespace.
// Sixteen namespaces of each kind cover the helper's own (one of each it
// creates) and a nested sandbox or two the command may start.
var userCounters = []userCounter{
	{"max_inotify_instances", 16},
	{"max_inotify_watches", 65536},
	{"max_fanotify_groups", 16},
	{"max_fanotify_marks", 65536},
	{"max_user_namespaces", 16},
	{"max_mnt_namespaces", 16},
	{"max_pid_namespaces", 16},
	{"max_net_namespaces", 16},
	{"max_ipc_namespaces", 16},
	{"max_uts_namespaces", 16},
	{"max_cgroup_namespaces", 16},
	{"max_time_namespaces", 16},
}

const userCountersDir = "/proc/sys/user/"

// readCounter reads one maximum of the caller's user namespace.
func readCounter(name string) (int64, error) {
	b, err := os.ReadFile(userCountersDir + name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(trimNL(b)), 10, 64)
}

var counterCapsOnce = sync.OnceValue(func() map[string]int64 {
	caps := map[string]int64{}
	for _, c := range userCounters {
		host, err := readCounter(c.name)
		if err != nil {
			continue // a kernel without this counter
		}
		caps[c.name] = min(c.ceiling, max(1, host/4))
	}
	return caps
})

// counterCaps are the maxima the helper writes in the command's user
// namespace, computed once from the server's own (its user namespace's)
// maxima.
func counterCaps() map[string]int64 { return counterCapsOnce() }

// counterFiles are the counters' files, opened for writing by the helper
// before its view hides the host's /proc and makes the view's /proc/sys
// read-only; they are written once the view is built (the helper's own
// detached mount copies count as mount namespaces while it builds it).
type counterFiles struct {
	fds  []int
	vals []int64
	name []string
}

// openCounters opens the file of every counter in caps.
func openCounters(caps map[string]int64) (*counterFiles, error) {
	cf := &counterFiles{}
	for _, c := range userCounters {
		v, ok := caps[c.name]
		if !ok {
			continue
		}
		fd, err := unix.Open(userCountersDir+c.name, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			cf.close()
			return nil, failf(result.InternalError, errSetup+": the command's %s could not be capped", c.name)
		}
		cf.fds, cf.vals, cf.name = append(cf.fds, fd), append(cf.vals, v), append(cf.name, c.name)
	}
	return cf, nil
}

// write sets every maximum in the helper's (the command's) user namespace
// and closes the files.
func (cf *counterFiles) write() error {
	defer cf.close()
	for i, fd := range cf.fds {
		if _, err := unix.Write(fd, []byte(fmt.Sprintf("%d\n", cf.vals[i]))); err != nil {
			return failf(result.InternalError, errSetup+": the command's %s could not be capped", cf.name[i])
		}
	}
	return nil
}

func (cf *counterFiles) close() {
	for _, fd := range cf.fds {
		unix.Close(fd)
	}
	cf.fds = nil
}

// counterRules are the landlock-isolation filter's refusals of the
// counters it cannot cap: inotify and fanotify instances.
func counterRules() []sysRule {
	rules := []sysRule{
		{nr: unix.SYS_INOTIFY_INIT1, ret: retNOSYS},
		{nr: unix.SYS_FANOTIFY_INIT, ret: retNOSYS},
	}
	for _, nr := range legacyInotify {
		rules = append(rules, sysRule{nr: nr, ret: retNOSYS})
	}
	return rules
}
