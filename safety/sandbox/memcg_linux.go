package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// The memory cgroup of a run. Where the server may create memory cgroups
// (cgroup v1's memory controller when it runs as root, or a cgroup v2
// subtree delegated to it with the memory controller enabled), every helper
// is moved into a memory cgroup of its own, a child of the server's,
// before its command arrives. Everything the command pins is then charged
// to it by the kernel: anonymous memory, tmpfs and /dev/shm pages, and
// (measured on a 6.18 kernel with cgroup v1: 200 MiB each held in AF_UNIX
// stream and datagram socket buffers, full pipes, a memfd and a /dev/shm
// file all showed in memory.usage_in_bytes, the buffers as kmem) kernel
// memory such as socket and pipe buffers. Its limit is memory_mb plus
// memcgHelperMB for the helper; past it the kernel's OOM killer ends a
// process of the group, the helper sees the group's oom_kill counter move
// and ends the rest, and the run is named LimitMemory. The group is removed
// once the helper is reaped.
//
// Elsewhere (an unprivileged server on a cgroup v1 host, which is what most
// users run) the watchdog bounds what it can see: see memwatch_linux.go.

// memcgHelperMB is what the limit of a run's memory cgroup allows past
// memory_mb: the helper's own memory (a Go process, about 8 MiB resident,
// and its view) is charged to the same group.
const memcgHelperMB = 16

// memcgKind is the memory cgroup mechanism this server can use.
type memcgKind int

const (
	memcgNone memcgKind = iota
	memcgV1
	memcgV2
)

var memcgProbe struct {
	once   sync.Once
	kind   memcgKind
	parent string // the directory under which run groups are made
}

// memcgAvailable reports which memory cgroup mechanism the server can use,
// and where, probing once: the server's own cgroup (from /proc/self/cgroup)
// must be writable, and for v2 (where its parent will do too) have the
// memory controller enabled for its children. Untested on this project's
// machines, whose cgroup v2 hierarchy has no controllers.
func memcgAvailable() (memcgKind, string) {
	memcgProbe.once.Do(func() {
		memcgProbe.kind, memcgProbe.parent = probeMemcg()
		if memcgProbe.kind != memcgNone {
			sweepMemcgs(memcgProbe.parent)
		}
	})
	return memcgProbe.kind, memcgProbe.parent
}

func probeMemcg() (memcgKind, string) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return memcgNone, ""
	}
	var v1, v2 string
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1 = parts[2]
			}
		}
	}
	if v2 != "" {
		// The server's own cgroup, or its parent: a process cannot sit in
		// a cgroup v2 that enables controllers for its children, so a
		// delegated unit usually moves itself into a leaf of its cgroup.
		for _, mnt := range cgroup2Mounts() {
			own := filepath.Join(mnt, v2)
			for _, dir := range []string{own, filepath.Dir(own)} {
				if dir != mnt && !strings.HasPrefix(dir, mnt+"/") {
					continue
				}
				ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
				if err != nil || !hasWord(ctl, "memory") || unix.Access(dir, unix.W_OK) != nil {
					continue
				}
				return memcgV2, dir
			}
		}
	}
	if v1 != "" {
		dir := filepath.Join("/sys/fs/cgroup/memory", v1)
		if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err == nil && unix.Access(dir, unix.W_OK) == nil {
			return memcgV1, dir
		}
	}
	return memcgNone, ""
}

// sweepMemcgs removes the groups that servers no longer running left
// under parent (a server that exited while a group's removal was pending,
// or with an armed thread waiting): an empty group costs kernel memory.
// A group still holding a process is left alone (rmdir refuses it).
func sweepMemcgs(parent string) {
	names, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range names {
		rest, ok := strings.CutPrefix(e.Name(), "bastion-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err != nil || n == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue // its server may still run
		}
		_ = unix.Rmdir(filepath.Join(parent, e.Name()))
	}
}

// cgroup2Mounts lists the mount points of cgroup2 file systems.
func cgroup2Mounts() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 {
			out = append(out, f[4])
		}
	}
	return out
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// memcgSeq numbers the groups of this server.
var memcgSeq atomic.Uint64

// memcg is the memory cgroup of one run.
type memcg struct {
	kind memcgKind
	dir  string
}

// newMemcg makes the memory cgroup of a run limited to limitMB, or returns
// nil where the server cannot (the watchdog then bounds memory alone).
func newMemcg(limitMB int) *memcg {
	m := newMemcgDir()
	if m != nil && m.setLimit(limitMB) != nil {
		m.remove()
		return nil
	}
	return m
}

// newMemcgDir makes a memory cgroup with no limit yet.
func newMemcgDir() *memcg {
	kind, parent := memcgAvailable()
	if kind == memcgNone {
		return nil
	}
	m := &memcg{kind: kind, dir: filepath.Join(parent, fmt.Sprintf("bastion-%d-%d", os.Getpid(), memcgSeq.Add(1)))}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return nil
	}
	return m
}

// setLimit limits the group to limitMB plus the helper's share.
func (m *memcg) setLimit(limitMB int) error {
	limit := strconv.FormatInt(int64(limitMB+memcgHelperMB)<<20, 10)
	var err error
	if m.kind == memcgV1 {
		err = m.write("memory.limit_in_bytes", limit)
		// With swap, the memory+swap total too (absent without swap
		// accounting; it must be set after the memory limit).
		_ = m.write("memory.memsw.limit_in_bytes", limit)
	} else {
		err = m.write("memory.max", limit)
		_ = m.write("memory.swap.max", "0")
	}
	return err
}

func (m *memcg) write(name, v string) error {
	return os.WriteFile(filepath.Join(m.dir, name), []byte(v), 0)
}

// add moves pid (the helper, before its command starts) into the group.
func (m *memcg) add(pid int) error {
	return m.write("cgroup.procs", strconv.Itoa(pid))
}

// eventsFile is the file whose oom_kill line counts the OOM kills in the
// group.
func (m *memcg) eventsFile() string {
	if m.kind == memcgV1 {
		return filepath.Join(m.dir, "memory.oom_control")
	}
	return filepath.Join(m.dir, "memory.events")
}

// ooms is the number of processes the OOM killer ended in the group.
func (m *memcg) ooms() int64 {
	data, err := os.ReadFile(m.eventsFile())
	if err != nil {
		return 0
	}
	return oomKills(data)
}

// oomKills reads the OOM events of memory.oom_control (v1: the
// "oom_kill" count, or 1 while "under_oom") or memory.events (v2: the
// larger of "oom_kill" and "oom"). An OOM with no process the killer may
// choose (every one at oom_score_adj -1000) kills nothing but is counted.
func oomKills(data []byte) int64 {
	var n int64
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		name, v, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			continue
		}
		switch string(name) {
		case "oom_kill", "oom", "under_oom":
			c, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			n = max(n, c)
		}
	}
	return n
}

// killAll ends every process left in the group (a command's descendants
// that outlived a helper killed by force, with landlock isolation), until
// none is left or a second has passed.
//
// The server itself is listed too while the armed thread that started the
// helper is in the group: it is never signalled.
func (m *memcg) killAll() {
	self := os.Getpid()
	for i := 0; i < 100; i++ {
		data, err := os.ReadFile(filepath.Join(m.dir, "cgroup.procs"))
		if err != nil {
			return
		}
		left := 0
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != self {
				_ = unix.Kill(pid, unix.SIGKILL)
				left++
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shieldFromOOM keeps the OOM killer off the helper pid (oom_score_adj -1000; the
// server is root where it makes memory cgroups): were it chosen, its
// command would lose its supervisor. The helper sets each command back to
// 1000 (limitStopped), so that the command is the one chosen; a command
// that lowers its own score again can at worst make the group's OOM kill
// nothing, which the helper sees (oomKills) and ends the command for.
func shieldFromOOM(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("-1000"), 0)
}

// remove deletes the group once its processes are gone (they may take a
// moment to leave it after being reaped); what it still holds (pages of a
// tmpfs that outlived it) is moved to the parent by the kernel.
func (m *memcg) remove() {
	for i := 0; i < 50; i++ {
		err := unix.Rmdir(m.dir)
		if err == nil || err == unix.ENOENT || err != unix.EBUSY {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// memoryMechanism names what bounds a command's memory, for describe.
func memoryMechanism(iso Isolation, _ NetMode) string {
	switch kind, _ := memcgAvailable(); kind {
	case memcgV1:
		return "memory: memcg v1"
	case memcgV2:
		return "memory: memcg v2"
	}
	return watchdogMechanism(iso)
}

func watchdogMechanism(iso Isolation) string {
	if iso == IsolationNamespaces {
		return "memory: watchdog (rss+shm+sockets+pipes)"
	}
	return "memory: watchdog (rss+sockets+pipes)"
}

// withoutMemcg is the confinement string conf of a run that got no memory
// cgroup after all (making one failed): the watchdog alone bounded it.
func withoutMemcg(conf string, iso Isolation) string {
	for _, k := range []string{"memory: memcg v1", "memory: memcg v2"} {
		if strings.HasSuffix(conf, k) {
			return strings.TrimSuffix(conf, k) + watchdogMechanism(iso)
		}
	}
	return conf
}

// settle completes the helper's answer r with what the group saw: an OOM
// kill names the memory limit, and a helper that the OOM killer ended
// itself (it is charged to the group too, and its death ends the command
// with it) answered nothing: the run was then stopped by the memory limit.
func (m *memcg) settle(r helperResult) helperResult {
	if !r.Started && r.SetupCode == result.InternalError {
		// The helper died without answering: with landlock isolation
		// its command's processes outlive it, but not its group.
		m.killAll()
	}
	if m.ooms() > 0 {
		if !r.Started && r.SetupCode == result.InternalError {
			r = helperResult{Started: true, ExitCode: -1, Signal: "SIGKILL"}
		}
		if r.Started && (r.Limit == "" || r.Limit == LimitTimeout) {
			r.Limit = LimitMemory
		}
	}
	return r
}

// Moving a process into a cgroup takes the kernel's cgroup_threadgroup_rwsem
// for writing, which waits for an RCU grace period: measured here 0.6 ms on
// an idle machine and 12 ms (p50) under a load average of 15. So on cgroup
// v1, where a thread can be in another memory cgroup than its process, the
// helper is not moved: it is born in its group. An armed thread is a locked
// OS thread of the server that already moved itself into a fresh group, in
// the background, and waits to start a helper there (a child is born in
// the cgroups of the thread that forks it); it ends with the helper
// (launch's rule: the thread that started a child outlives it), which
// leaves the group empty for removal. One armed thread is kept ready, and
// another armed as soon as it is taken; a run that finds none ready (the
// first, or one that follows another within the time arming takes) has
// its helper moved while it builds its view, as on cgroup v2 (which moves
// whole processes only), see spawn.
type armed struct {
	mcg     *memcg
	limitMB int         // the limit its group has, 0: none yet
	start   chan func() // the helper's start, run on the thread; nil: disarm
}

var armory struct {
	sync.Mutex
	ready   *armed
	arming  bool
	limitMB int // the memory_mb of the last run: the next group gets it ahead
}

// arm makes an armed thread whose group is limited to limitMB (0: not
// yet), or returns nil where it cannot. It waits for the move.
func arm(limitMB int) *armed {
	a := &armed{start: make(chan func())}
	ok := make(chan bool, 1)
	onLockedThread(func() {
		m := newMemcgDir()
		if m == nil {
			ok <- false
			return
		}
		if limitMB > 0 && m.setLimit(limitMB) == nil {
			a.limitMB = limitMB
		}
		if m.write("tasks", strconv.Itoa(unix.Gettid())) != nil {
			m.remove()
			ok <- false
			return
		}
		a.mcg = m
		ok <- true
		if body := <-a.start; body != nil {
			body()
		}
	})
	if !<-ok {
		return nil
	}
	return a
}

// disarm ends an armed thread that will not start a helper, and removes
// its group once the thread has left it.
func (a *armed) disarm() {
	a.start <- nil
	go a.mcg.remove()
}

// takeArmed returns the armed thread kept ready, its group limited to
// limitMB, and arms the next in the background; nil when none is ready
// (spawn then moves the helper into a group of its own instead).
func takeArmed(limitMB int) *armed {
	armory.Lock()
	a := armory.ready
	armory.ready = nil
	armory.limitMB = limitMB
	armory.Unlock()
	go rearm()
	if a == nil {
		return nil
	}
	if a.limitMB != limitMB && a.mcg.setLimit(limitMB) != nil {
		a.disarm()
		return nil
	}
	return a
}

// rearm arms the thread kept ready, unless one is ready or being armed.
func rearm() {
	armory.Lock()
	if armory.ready != nil || armory.arming {
		armory.Unlock()
		return
	}
	armory.arming = true
	limitMB := armory.limitMB
	armory.Unlock()
	a := arm(limitMB)
	armory.Lock()
	armory.arming = false
	if armory.ready == nil {
		armory.ready, a = a, nil
	}
	armory.Unlock()
	if a != nil {
		a.disarm()
	}
}

// disarmIdle ends the armed thread kept ready (at shutdown).
func disarmIdle() {
	armory.Lock()
	a := armory.ready
	armory.ready = nil
	armory.Unlock()
	if a != nil {
		a.disarm()
	}
}

// launchOn is launch on the armed thread a: the helper is born in a's group.
func launchOn(cmd *proc, a *armed) (*child, error) {
	c := &child{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	a.start <- func() { c.startWait(started) }
	if err := <-started; err != nil {
		go a.mcg.remove()
		return nil, err
	}
	return c, nil
}
