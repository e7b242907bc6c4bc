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

// memcgDisabled turns the memory cgroup off (tests of the watchdog).
var memcgDisabled atomic.Bool

// memcgAvailable reports which memory cgroup mechanism the server can use,
// and where, probing once: the server's own cgroup (from /proc/self/cgroup)
// must be writable, and for v2 have the memory controller enabled for its
// children.
func memcgAvailable() (memcgKind, string) {
	memcgProbe.once.Do(func() {
		memcgProbe.kind, memcgProbe.parent = probeMemcg()
	})
	if memcgDisabled.Load() {
		return memcgNone, ""
	}
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
		for _, mnt := range cgroup2Mounts() {
			dir := filepath.Join(mnt, v2)
			ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if err != nil || !hasWord(ctl, "memory") || unix.Access(dir, unix.W_OK) != nil {
				continue
			}
			return memcgV2, dir
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
	kind, parent := memcgAvailable()
	if kind == memcgNone {
		return nil
	}
	m := &memcg{kind: kind, dir: filepath.Join(parent, fmt.Sprintf("bastion-%d-%d", os.Getpid(), memcgSeq.Add(1)))}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return nil
	}
	limit := strconv.FormatInt(int64(limitMB+memcgHelperMB)<<20, 10)
	var err error
	if kind == memcgV1 {
		err = m.write("memory.limit_in_bytes", limit)
		// With swap, the memory+swap total too (absent without swap
		// accounting; it must be set after the memory limit).
		_ = m.write("memory.memsw.limit_in_bytes", limit)
	} else {
		err = m.write("memory.max", limit)
		_ = m.write("memory.swap.max", "0")
	}
	if err != nil {
		m.remove()
		return nil
	}
	return m
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

// oomKills reads the "oom_kill N" line of memory.oom_control (v1) or
// memory.events (v2).
func oomKills(data []byte) int64 {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	return 0
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
	if iso == IsolationNamespaces {
		return "memory: watchdog (rss+shm+sockets)"
	}
	return "memory: watchdog (rss+sockets)"
}

// settle completes the helper's answer r with what the group saw: an OOM
// kill names the memory limit, and a helper that the OOM killer ended
// itself (it is charged to the group too, and its death ends the command
// with it) answered nothing: the run was then stopped by the memory limit.
func (m *memcg) settle(r helperResult) helperResult {
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
