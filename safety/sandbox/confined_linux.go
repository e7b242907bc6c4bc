package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// A confined run is carried out by a helper: this very binary, re-executed
// under the name helperArg0 as the first process of the command's new
// namespaces (namespaces isolation) or as a plain child (landlock
// isolation). The helper builds the command's view of the filesystem,
// applies the limits, starts the command from a thread that carries
// no_new_privs, no capabilities, the seccomp filter and the Landlock
// domain, then reaps every process, ends them all once the command ends,
// and reports on a socket. See helper_linux.go.
//
// The helper's descriptors: 3 the control socket, 4 and 5 /dev/null (they
// hold the places: each command's stdout and stderr come with the command,
// as a helper may serve several, see reuse_linux.go), 6 an O_PATH
// descriptor of the jail root.
const helperArg0 = "bastion-sandbox-helper"

// helperConfig is the one message the server sends the helper.
type helperConfig struct {
	Isolation    Isolation `json:"isolation"`
	Net          NetMode   `json:"net"`
	ABI          int       `json:"abi"`
	Jail         string    `json:"jail"`
	JailDev      uint64    `json:"jail_dev"`
	JailIno      uint64    `json:"jail_ino"`
	Home         string    `json:"home"`
	Tmp          string    `json:"tmp"`
	Writable     []string  `json:"writable"`
	ReadPaths    []string  `json:"read_paths"`
	ExecWritable bool      `json:"exec_writable"`
	ProxySocket  string    `json:"proxy_socket"`
	Limits       Limits    `json:"limits"`
	// HomeID and TmpID are the identities of HOME and TMPDIR when the
	// helper was prepared: a directory recreated since is another one.
	HomeID [2]uint64 `json:"home_id"`
	TmpID  [2]uint64 `json:"tmp_id"`
	// Protected are the protected paths mounted over themselves in the
	// view (read-only, or pinned), parents first.
	Protected []protectedMount `json:"protected,omitempty"`
	// Counters are the per-user kernel counters the helper caps in the
	// command's user namespace (namespaces isolation; counters_linux.go).
	Counters map[string]int64 `json:"counters,omitempty"`
	// RunAs is the user the command runs as when it is not the server's
	// (a root server's command; idmap_linux.go), and Idmapped the sources
	// of the idmapped trees handed over from idmapFD0 on.
	RunAs    *runIDs  `json:"run_as,omitempty"`
	Idmapped []string `json:"idmapped,omitempty"`
	// Probe asks the helper to answer at once: Preflight's check that the
	// namespaces can be created at all.
	Probe bool `json:"probe,omitempty"`
	// MemEvents is the oom_kill counter file of the run's memory cgroup
	// (memcg_linux.go), empty when none applies. It is set by spawn, not
	// part of what a prepared helper is matched by.
	MemEvents string `json:"mem_events,omitempty"`
}

// helperRun is the second message: the command itself.
type helperRun struct {
	TimeoutMS int64    `json:"timeout_ms"`
	Path      string   `json:"path"`
	Argv      []string `json:"argv"`
	Env       []string `json:"env"`
	DirRel    string   `json:"dir_rel"`
	DirDev    uint64   `json:"dir_dev"`
	DirIno    uint64   `json:"dir_ino"`
	// TTY: the passed stdin is a terminal, also stdout, stderr and the
	// controlling terminal (Spec.TTY).
	TTY bool `json:"tty,omitempty"`
	// Stdin and Publish say which descriptors came with the message, in
	// this order: the command's stdin, the port-publishing socket.
	Stdin   bool `json:"stdin,omitempty"`
	Publish bool `json:"publish,omitempty"`
	// Hold: the command, stopped after its execve with its limits set, is
	// let go only on releaseMsg (Spec.Gate).
	Hold bool `json:"hold,omitempty"`
}

// releaseMsg lets a held command run (helperRun.Hold); anything else, or
// the socket closed, ends it before its first instruction.
const releaseMsg = "release"

// helperResult is the helper's one answer.
type helperResult struct {
	// SetupCode and SetupReason are set when nothing ran.
	SetupCode   result.Code `json:"setup_code,omitempty"`
	SetupReason string      `json:"setup_reason,omitempty"`
	Started     bool        `json:"started"`
	ExitCode    int         `json:"exit_code"`
	Signal      string      `json:"signal,omitempty"`
	Limit       string      `json:"limit,omitempty"`
	Cancelled   bool        `json:"cancelled,omitempty"`
	CPUMS       int64       `json:"cpu_ms"`
	PeakTasks   int         `json:"peak_tasks"`
	PeakRSSKB   int64       `json:"peak_rss_kb"`
	// Lookups are the host names the command asked the view's resolver
	// for (dns_linux.go).
	Lookups []string `json:"lookups,omitempty"`
	// Reusable: the helper left nothing of this command in its namespaces
	// and waits for another (reuse_linux.go); otherwise it exits.
	Reusable bool `json:"reusable,omitempty"`
	// OOMRead: the helper read the run's memory cgroup's OOM counter once
	// every process was reaped (and named the memory limit if it moved),
	// so the server need not (memcg.settle).
	OOMRead bool `json:"oom_read,omitempty"`
}

// cancelMsg asks the helper to end the command now.
const cancelMsg = "cancel"

// maxMsg bounds one control message (argv is at most a few KiB).
const maxMsg = 1 << 20

// setupBound is how long a helper may take to build the command's view
// (a few milliseconds normally; much more only on a machine in trouble).
const setupBound = 30 * time.Second

// helperBackstop is how long past the timeout the server waits for the
// helper's answer before killing the helper itself.
const helperBackstop = 5 * time.Second

// nsFlags are the namespaces of namespaces isolation.
func nsFlags(net NetMode) uintptr {
	f := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if net != NetAllow {
		f |= unix.CLONE_NEWNET
	}
	return f
}

// helperAttr is how the helper is started: its own session, killed when
// the server's starting thread (hence the server) dies, and for namespaces
// isolation the new namespaces, in which the server's user and group are
// mapped to root (and nothing else is mapped), or, when the command runs
// as another user (runAs, a root server), root and that user, each to
// itself, with setgroups allowed so that the command starts with no
// supplementary group.
func helperAttr(iso Isolation, net NetMode, runAs *runIDs) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if iso == IsolationNamespaces {
		a.Cloneflags = nsFlags(net)
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
		if runAs != nil {
			a.UidMappings = append(a.UidMappings, syscall.SysProcIDMap{ContainerID: runAs.UID, HostID: runAs.UID, Size: 1})
			a.GidMappings = append(a.GidMappings, syscall.SysProcIDMap{ContainerID: runAs.GID, HostID: runAs.GID, Size: 1})
			a.GidMappingsEnableSetgroups = true
		}
	}
	return a
}

// identity is (dev, ino) of an open file.
func identity(fd int) (uint64, uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, err
	}
	return st.Dev, st.Ino, nil
}

// openBeneath opens rel as a directory beneath dirfd: no "..", no symbolic
// link, no magic link, no mount crossing.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_DIRECTORY | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// staticConfig is the part of a run's instructions that a helper can be
// prepared with before the command is known.
func staticConfig(s *Spec, p runPlan) (helperConfig, error) {
	cfg := helperConfig{Isolation: p.iso, Net: p.net, ABI: p.abi, Jail: filepath.Clean(s.JailRoot),
		Home: s.HomeDir, Tmp: s.TempDir, Writable: s.WritePaths, ReadPaths: s.ReadPaths,
		ExecWritable: s.ExecWritable, ProxySocket: s.ProxySocket, Limits: s.Limits.withDefaults()}
	if len(cfg.ReadPaths) == 0 {
		cfg.ReadPaths = DefaultReadPaths
	}
	if p.iso == IsolationNamespaces {
		cfg.Counters = counterCaps()
	}
	cfg.RunAs = commandIDs(&cfg)
	var st unix.Stat_t
	if err := unix.Stat(cfg.Jail, &st); err != nil {
		return cfg, result.Wrap(result.NotFound, "the jail root cannot be opened", err)
	}
	cfg.JailDev, cfg.JailIno = st.Dev, st.Ino
	for _, d := range []struct {
		path string
		id   *[2]uint64
	}{{s.HomeDir, &cfg.HomeID}, {s.TempDir, &cfg.TmpID}} {
		if err := unix.Stat(d.path, &st); err != nil {
			return cfg, invalid("a private directory of the run does not exist")
		}
		*d.id = [2]uint64{st.Dev, st.Ino}
	}
	return cfg, nil
}

// warm is a started helper that has built (or is building) its view and
// waits for its command.
type warm struct {
	c     *child
	ctl   *os.File
	fd    int
	ready chan helperResult
	jail  *os.File
	mcg   *memcg // the run's memory cgroup, nil where none applies
	runs  int    // the commands it has served
	// readyDue: the helper was kept after a command and its "ready"
	// message (resetForNext) is read by the run that takes it
	// (takeReady), not by a goroutine of its own.
	readyDue bool
	// reads counts the goroutines reading a message from the control
	// socket (readReady): its descriptor is closed only once they are
	// done, so that none reads a descriptor number reused since.
	reads sync.WaitGroup
	// wt waits for the control socket, the run's output pipes and wake
	// through Go's poller; made by the first run that needs it (poller) and
	// kept with the helper: an epoll instance per wait was about a sixth
	// of the server's system calls of a run. ctlWatched: the control
	// socket is in it.
	wt         *waiter
	wake       int
	ctlWatched bool
}

// poller returns w's waiter, with wake (an eventfd a run's callbacks write
// to, relay) in it, made on first use.
func (w *warm) poller() (*waiter, error) {
	if w.wt != nil {
		return w.wt, nil
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	wt, err := newWaiter(wake)
	if err != nil {
		unix.Close(wake)
		return nil, err
	}
	w.wt, w.wake = wt, wake
	return wt, nil
}

// watchCtl has w's waiter wait for the control socket, or not.
func (w *warm) watchCtl(on bool) error {
	if w.ctlWatched == on {
		return nil
	}
	if !on {
		w.wt.remove(w.fd)
	} else if err := w.wt.add(w.fd); err != nil {
		return err
	}
	w.ctlWatched = on
	return nil
}

// readReady reads the helper's next message (its answer to the setup, or
// that it is ready again after a command) into ready, in the background.
func (w *warm) readReady() {
	w.reads.Add(1)
	go func() {
		r := w.answer()
		w.reads.Done()
		w.ready <- r
	}()
}

// takeReady reads the "ready" message of a kept helper, waiting for it
// through Go's poller. It is read here, by the run that takes the helper,
// rather than by a goroutine started when the helper was kept: that
// goroutine sat in read(2) while the helper cleared what the command left,
// holding a processor the runtime's monitor then polled every 20 µs, and
// woke another thread to hand its message over.
func (w *warm) takeReady() helperResult {
	w.readyDue = false
	wt, err := w.poller()
	if err != nil || w.watchCtl(true) != nil {
		return w.answer() // out of descriptors: a blocking read
	}
	// Readable: the message, or end of file once the helper is gone (its
	// answer is then a setup failure). The control socket stays in the
	// waiter for the run's relay.
	for {
		fds, _ := wt.wait(time.Time{})
		if slices.Contains(fds, w.fd) {
			return w.answer()
		}
		w.drainWake() // a late wake-up of the last run
	}
}

// discard ends a helper that will not be used.
func (w *warm) discard() { w.teardown(false) }

// teardown ends the helper, if it still runs (with exited, once it has
// exited by itself: then its process group is ended after it, for what
// landlock isolation leaves there), and releases what the server holds of
// it.
func (w *warm) teardown(exited bool) {
	if exited {
		<-w.c.exited
	}
	w.c.killGroup()
	<-w.c.exited
	_, _ = w.c.reap()
	w.reads.Wait() // the helper is gone: a pending read has returned
	if w.wt != nil {
		w.wt.close()
		unix.Close(w.wake)
	}
	w.ctl.Close()
	w.jail.Close()
	if w.mcg != nil {
		if exited {
			w.mcg.killAll()
		}
		w.mcg.remove()
	}
}

// spawn starts a helper and hands it the static instructions.
//
// The run's memory cgroup (memcg_linux.go), where one applies: on cgroup
// v1 the helper is born in it, started from an armed thread; on cgroup v2,
// or with no armed thread ready, the group is made while the helper starts
// and the helper moved into it while it builds its view. Either way the
// command starts only once spawn has returned.
func spawn(cfg helperConfig) (*warm, error) {
	var a *armed
	made := make(chan *memcg, 1)
	kind, _ := memcgAvailable()
	if kind == memcgV1 {
		a = takeArmed(cfg.Limits.MemoryMB)
	}
	if kind != memcgNone && a == nil {
		go func() { made <- newMemcg(cfg.Limits.MemoryMB) }()
	} else {
		made <- nil
	}
	w, err := spawnIn(cfg, a, made)
	if err != nil {
		if mcg := <-made; mcg != nil {
			mcg.remove()
		}
	}
	return w, err
}

// helperEnv is the helper's whole environment: nothing of the server's,
// and one processor for its Go runtime. With two or more, the runtime's
// monitor thread polls every 20 µs for as long as one of them is not idle,
// which in a helper is whenever its forker waits in recvmsg or wait4 (a
// blocking system call holds its processor): a few hundred wake-ups per
// command in each helper, on the CPUs the command and the server need.
// With one, the monitor hands the processor off after two polls and
// sleeps. Measured with a raw JSON-RPC client over stdio, four rounds of
// 300 calls back to back on two vCPUs: run_command("true") p50 3.7-4.5 ms
// with the default, 2.8-3.4 ms with one.
var helperEnv = []string{"GOMAXPROCS=1"}

// spawnIn is spawn with the armed thread a (nil: none) or the run's memory
// cgroup to come on made (nil: none; it is passed back on made when spawnIn
// fails).
func spawnIn(cfg helperConfig, a *armed, made chan *memcg) (_ *warm, err error) {
	taken, launched := false, false
	defer func() {
		if err != nil && taken {
			made <- nil // discard removed it
		}
		if err != nil && a != nil && !launched {
			a.disarm()
		}
	}()
	if a != nil {
		cfg.MemEvents = a.mcg.eventsFile()
	}
	trees, err := idmappedTrees(&cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range trees {
			t.Close()
		}
	}()
	msg, err := json.Marshal(cfg)
	if err != nil || len(msg) > maxMsg {
		return nil, invalid("the sandbox configuration is too large")
	}
	jfd, err := unix.Open(cfg.Jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, result.Wrap(result.NotFound, "the jail root cannot be opened", err)
	}
	jail := os.NewFile(uintptr(jfd), cfg.Jail)
	if dev, ino, err := identity(jfd); err != nil || dev != cfg.JailDev || ino != cfg.JailIno {
		jail.Close()
		return nil, result.New(result.Stale, "the jail root changed while the command was being started; nothing ran")
	}
	closeAll := func() { jail.Close() }
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		closeAll()
		return nil, result.Wrap(result.InternalError, errSetup+": the control socket could not be created", err)
	}
	ctl := os.NewFile(uintptr(pair[0]), "sandbox-control")
	theirs := os.NewFile(uintptr(pair[1]), "sandbox-control-helper")
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		closeAll()
		ctl.Close()
		theirs.Close()
		return nil, result.Wrap(result.InternalError, errSetup+": /dev/null could not be opened", err)
	}
	cmd := &proc{path: "/proc/self/exe", argv: []string{helperArg0}, env: helperEnv,
		files: append([]*os.File{devnull, devnull, devnull, theirs, devnull, devnull, jail}, trees...),
		sys:   helperAttr(cfg.Isolation, cfg.Net, cfg.RunAs)}
	var c *child
	if a != nil {
		c, err = launchOn(cmd, a)
		launched = true
	} else {
		c, err = launch(cmd)
	}
	devnull.Close()
	theirs.Close()
	if err != nil {
		ctl.Close()
		jail.Close()
		return nil, nsStartError(cfg.Isolation, err)
	}
	w := &warm{c: c, ctl: ctl, fd: pair[0], ready: make(chan helperResult, 1), jail: jail}
	if a != nil {
		w.mcg = a.mcg
		shieldFromOOM(c.cmd.p.Pid)
	}
	mv := <-made
	taken = true
	if mv != nil {
		w.mcg = mv
		cfg.MemEvents = w.mcg.eventsFile()
		if msg, err = json.Marshal(cfg); err != nil || len(msg) > maxMsg {
			w.discard()
			return nil, invalid("the sandbox configuration is too large")
		}
	}
	if _, err := unix.Write(pair[0], msg); err != nil {
		w.discard()
		return nil, result.Wrap(result.InternalError, errSetup+": the helper did not take its instructions", err)
	}
	if mv != nil {
		shieldFromOOM(c.cmd.p.Pid)
		if err := mv.add(c.cmd.p.Pid); err != nil {
			w.discard()
			return nil, result.Wrap(result.InternalError, errSetup+": the helper could not be put in its memory cgroup", err)
		}
	}
	w.readReady()
	return w, nil
}

// msgBufs holds the 64 KiB buffers the server reads the helper's answers
// and the command's output into: made afresh for each run, two of them
// were most of the server's allocation per command, and so of its
// garbage collection.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// answer reads one message from the helper.
func (w *warm) answer() helperResult {
	bp := msgBufs.Get().(*[]byte)
	defer msgBufs.Put(bp)
	buf := *bp
	var r helperResult
	n, err := unix.Read(w.fd, buf)
	if err != nil || n <= 0 || json.Unmarshal(buf[:n], &r) != nil {
		r = helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox helper ended without an answer"}
	}
	return r
}

// prepared is a helper being started, or started, for a key (and the
// private HOME it was prepared for).
type prepared struct {
	key  string
	home string
	w    chan *warm // receives the helper (nil if it could not start), once
}

var parked struct {
	sync.Mutex
	list []*prepared
}

// Prepare starts, in the background, a helper for a run like s (its
// command, arguments, environment, working directory and timeout do not
// matter), so that the next Run with the same jail, private directories,
// confinement and limits skips the helper's start-up: the namespaces, the
// view, the Landlock ruleset and the confined thread that will fork the
// command are ready (or on their way) when the command arrives. It is a
// speed hint: a Spec it cannot prepare for is ignored, and a Run that finds
// no prepared helper starts one itself. At most twice MaxPrepared wait at
// once (the oldest is ended to make room); DiscardPrepared ends them.
func Prepare(s Spec) {
	if s.validateStatic() != nil {
		return
	}
	p, err := plan(s.Landlock, s.Isolation, s.net())
	if err != nil || p.abi == 0 {
		return
	}
	cfg, err := staticConfig(&s, p)
	if err != nil {
		return
	}
	if cfg.Protected, err = protectedMounts(&s, p); err != nil {
		return
	}
	key, _ := json.Marshal(cfg)
	e := &prepared{key: string(key), home: cfg.Home, w: make(chan *warm, 1)}
	parked.Lock()
	for _, p := range parked.list {
		if p.key == e.key {
			// Prepared already, or kept from the pair's last command.
			parked.Unlock()
			return
		}
	}
	parked.list = append(parked.list, e)
	var evict *prepared
	if len(parked.list) > 2*MaxPrepared {
		evict, parked.list = parked.list[0], parked.list[1:]
	}
	parked.Unlock()
	go func() {
		w, err := spawn(cfg)
		if err != nil {
			w = nil
		}
		e.w <- w
	}()
	if evict != nil {
		go evict.discard()
	}
}

// discard ends the helper of e once it has started.
func (e *prepared) discard() {
	if w := <-e.w; w != nil {
		w.discard()
	}
}

// DiscardPrepared ends every prepared helper (at shutdown).
func DiscardPrepared() {
	disarmIdle()
	parked.Lock()
	list := parked.list
	parked.list = nil
	parked.Unlock()
	for _, e := range list {
		e.discard()
	}
}

// takeParked returns a prepared helper for key, if one was prepared,
// waiting for it to have started if it is on its way. On a miss, the
// helpers prepared for the same private HOME (home) are ended: that HOME
// is this run's now, and they were prepared for a run that differs (the
// jail's protected paths or the limits changed since), so they would only
// hold a place among the prepared until evicted.
func takeParked(key, home string) *warm {
	parked.Lock()
	var e *prepared
	for i, p := range parked.list {
		if p.key == key {
			e = p
			parked.list = slices.Delete(parked.list, i, i+1)
			break
		}
	}
	var stale []*prepared
	if e == nil {
		parked.list = slices.DeleteFunc(parked.list, func(p *prepared) bool {
			if p.home == home {
				stale = append(stale, p)
			}
			return p.home == home
		})
	}
	parked.Unlock()
	for _, p := range stale {
		go p.discard()
	}
	if e == nil {
		preparedMisses.Add(1)
		return nil
	}
	w := <-e.w
	if w != nil && w.readyDue {
		// A kept helper: ready once it has cleared what its last command
		// left (at once, unless that command ended a moment ago). One that
		// could not, or died while it waited, is ended: start another.
		setup := w.takeReady()
		if setup.SetupCode != "" {
			go w.discard()
			preparedMisses.Add(1)
			return nil
		}
		w.ready <- setup
	}
	preparedHits.Add(1)
	return w
}

// keep parks w, which has served a command and waits for another, for the
// next run with key and home (reuse_linux.go); the oldest parked helper is
// ended to make room, as Prepare does. It returns false when a helper is
// parked for key already (prepared while the run went on): the caller
// ends w instead.
func keep(key, home string, w *warm) bool {
	e := &prepared{key: key, home: home, w: make(chan *warm, 1)}
	e.w <- w
	parked.Lock()
	for _, p := range parked.list {
		if p.key == key {
			parked.Unlock()
			return false
		}
	}
	parked.list = append(parked.list, e)
	var evict *prepared
	if len(parked.list) > 2*MaxPrepared {
		evict, parked.list = parked.list[0], parked.list[1:]
	}
	parked.Unlock()
	if evict != nil {
		go evict.discard()
	}
	return true
}

// Kept reports whether a helper waits for the next run in the private HOME
// home (prepared, or kept after its last command): a cheap check by HOME,
// which a run whose settings changed since finds stale (takeParked).
func Kept(home string) bool {
	parked.Lock()
	defer parked.Unlock()
	for _, p := range parked.list {
		if p.home == home {
			return true
		}
	}
	return false
}

// preparedHits and preparedMisses count the confined runs that found a
// prepared helper for their key, and those that did not.
var preparedHits, preparedMisses atomic.Uint64

// PrepareStats returns how many confined runs found a prepared helper
// (Prepare) that matched them and how many started one on the request
// path: for benchmarks and tests of the arrival patterns.
func PrepareStats() (hits, misses uint64) { return preparedHits.Load(), preparedMisses.Load() }

// runConfined runs s through a helper: a prepared one if it matches,
// otherwise one started now. The steps: identify the working directory
// (commandMessage), take or start a helper, wait for its setup
// (awaitSetup), hand it the command (with Spec.Stdin, sendCommand), relay its output while waiting for its
// answer (awaitAnswer), then turn the answer into the outcome (outcomeOf).
func runConfined(ctx context.Context, s *Spec, p runPlan, env []string, out Outcome, g *guard) (Outcome, error) {
	cfg, err := staticConfig(s, p)
	if err != nil {
		return out, err
	}
	if g != nil && p.iso == IsolationNamespaces {
		cfg.Protected = mountsOf(g.ready)
		for _, m := range cfg.Protected {
			out.ReadOnly = append(out.ReadOnly, m.Rel)
		}
	}
	msg, release, err := commandMessage(s, &cfg, env)
	if err != nil {
		return out, err
	}
	// The directories stay open (their inodes cannot be reused) until the
	// run is over.
	defer release()

	out.Confinement += runsAs(&cfg)
	start := time.Now()
	key, _ := json.Marshal(cfg)
	w := takeParked(string(key), cfg.Home)
	if w == nil {
		if w, err = spawn(cfg); err != nil {
			return out, err
		}
	}
	if w.mcg == nil {
		out.Confinement = withoutMemcg(out.Confinement, p.iso)
	}
	c := w.c
	if p.iso == IsolationNamespaces {
		out.HelperPID = c.cmd.p.Pid
	}
	// end ends the helper: the run failed before its command started.
	end := w.discard
	if setup := awaitSetup(ctx, w); setup.SetupCode != "" {
		end()
		if setup.SetupCode == result.Timeout {
			// The request's deadline passed while the helper set up: the
			// timeout fired, though nothing of the command ran.
			out.TimedOut, out.Limit = true, LimitTimeout
		}
		return out, result.New(setup.SetupCode, setup.SetupReason)
	}
	// The command's output: pipes of this run, whose write ends go with
	// the command (the helper may serve more than one).
	outR, outW, errR, errW, err := relayPipes()
	if err != nil {
		end()
		return out, err
	}
	hint := &stderrWatch{w: s.Stderr}
	rl := &relay{ctx: ctx, w: w, timeout: s.Timeout, term: s.Terminate, out: &out, outFD: outR, errFD: errR,
		stdout: s.Stdout, stderr: hint}
	defer rl.closePipes()
	passed := []int{outW, errW}
	closeW := func() { unix.Close(outW); unix.Close(errW) }
	fail := func(err error) (Outcome, error) {
		closeW()
		end()
		return out, err
	}
	if s.Stdin != nil {
		f, closeStdin, err := stdinFile(s.Stdin)
		if err != nil {
			return fail(err)
		}
		defer closeStdin()
		passed = append(passed, int(f.Fd()))
	}
	var pub *publisher
	if publishing(s, &cfg) {
		if pub, err = newPublisher(s.Publish); err != nil {
			return fail(err)
		}
		defer pub.close()
		passed = append(passed, pub.theirs)
	}
	if err := sendCommand(w.fd, msg, passed); err != nil {
		return fail(result.Wrap(result.InternalError, errSetup+": the helper did not take its command", err))
	}
	closeW()
	var gateErr error
	if s.Gate != nil {
		// While the helper starts the command and stops it at its exec.
		release := releaseMsg
		if gateErr = s.Gate(); gateErr != nil {
			release = cancelMsg
		}
		if _, err := unix.Write(w.fd, []byte(release)); err != nil && gateErr == nil {
			gateErr = result.Wrap(result.InternalError, errSetup+": the helper did not take its command", err)
		}
	}
	if pub != nil {
		pub.start()
	}
	if s.Started != nil {
		s.Started()
	}
	r, runErr, clean := rl.run()
	// Once the helper has answered, every process of the command is dead
	// and reaped (it answers only after wait4 found nothing left).
	if w.mcg != nil && !r.OOMRead {
		r = w.mcg.settle(r)
	}
	w.runs++
	if r.Reusable && clean && runErr == nil && r.Limit == "" && s.Stdin == nil && !s.TTY && pub == nil &&
		p.iso == IsolationNamespaces {
		// It clears what the command left and says it is ready, as after
		// its setup, and is kept for the next run of this pair
		// (reuse_linux.go), which reads that message (takeReady).
		w.readyDue = true
		if !keep(string(key), cfg.Home, w) {
			go end()
		}
	} else {
		// The helper's own exit, which tears down its namespaces, is
		// collected in the background.
		go w.teardown(true)
	}
	out.Duration = time.Since(start)
	if gateErr != nil && !r.Started {
		out.Duration = 0 // nothing of the command ran
		return out, gateErr
	}
	return outcomeOf(out, r, runErr, hint.hint, cfg.Limits, s.Timeout)
}

// commandMessage is the helper's second message for s: the command and
// its working directory, opened beneath the jail exactly as the helper
// will open it in its view, and identified. release closes the
// descriptors it opened.
func commandMessage(s *Spec, cfg *helperConfig, env []string) (msg []byte, release func(), err error) {
	run := helperRun{TimeoutMS: s.Timeout.Milliseconds(), Path: s.Path, Argv: s.Argv, Env: env, TTY: s.TTY,
		Stdin: s.Stdin != nil, Publish: publishing(s, cfg), Hold: s.Gate != nil}
	jfd, err := unix.Open(cfg.Jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, result.Wrap(result.NotFound, "the jail root cannot be opened", err)
	}
	fds := []int{jfd}
	release = func() {
		for i := len(fds) - 1; i >= 0; i-- {
			unix.Close(fds[i])
		}
	}
	fail := func(err error) ([]byte, func(), error) {
		release()
		return nil, nil, err
	}
	if dev, ino, err := identity(jfd); err != nil || dev != cfg.JailDev || ino != cfg.JailIno {
		return fail(result.New(result.Stale, "the jail root changed while the command was being started; nothing ran"))
	}
	run.DirRel, _ = filepath.Rel(cfg.Jail, filepath.Clean(s.Dir))
	dfd := jfd
	if run.DirRel != "." {
		if dfd, err = openBeneath(jfd, run.DirRel, unix.O_PATH); err != nil {
			return fail(cwdError(err))
		}
		fds = append(fds, dfd)
	}
	if run.DirDev, run.DirIno, err = identity(dfd); err != nil {
		return fail(result.Wrap(result.InternalError, errSetup, err))
	}
	msg, err = json.Marshal(run)
	if err != nil || len(msg) > maxMsg {
		return fail(invalid("the command is too large to hand to the sandbox"))
	}
	return msg, release, nil
}

// The refusals of a working directory the helper could not open.
var (
	errNoCwd = result.New(result.NotFound,
		"the working directory does not exist in the jail (or is not a directory)")
	errCwdEscape = result.New(result.PathEscape,
		"the working directory cannot be reached inside the jail without a symbolic link, .. or a mount")
)

// cwdError turns openBeneath's error for the working directory into a
// refusal: what result's errno table calls NOT_FOUND (ENOENT, ENOTDIR) is
// errNoCwd; anything else (ELOOP, EXDEV, EAGAIN from a racing rename) is
// errCwdEscape.
func cwdError(err error) error {
	if result.CodeOf(err) == result.NotFound {
		return errNoCwd.Wrap(err)
	}
	return errCwdEscape.Wrap(err)
}

// awaitSetup waits for w's answer to its static instructions. The helper's
// setup is bounded too: by the request and by setupBound, past which a
// helper that has not built its view is taken to be stuck.
func awaitSetup(ctx context.Context, w *warm) helperResult {
	select {
	case setup := <-w.ready:
		return setup
	case <-ctx.Done():
		setup := helperResult{SetupCode: result.OperationFailed, SetupReason: "the command was cancelled before it started"}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			setup.SetupCode = result.Timeout
			setup.SetupReason = "the request's deadline passed before the command started; nothing ran"
		}
		return setup
	case <-time.After(setupBound):
		return helperResult{SetupCode: result.InternalError, SetupReason: errSetup + ": the sandbox helper did not finish setting up"}
	}
}

// outcomeOf completes out from the helper's answer r: the exit, the
// resources used and the limit that stopped the command (or that its
// stderr, hint, points at when it failed without one), and returns the
// error the run ends with.
func outcomeOf(out Outcome, r helperResult, runErr error, hint string, l Limits, timeout time.Duration) (Outcome, error) {
	if r.SetupCode != "" && !r.Started {
		if runErr != nil {
			return out, runErr
		}
		return out, result.New(r.SetupCode, r.SetupReason)
	}
	out.ExitCode, out.Signal = r.ExitCode, r.Signal
	out.CPUTime = time.Duration(r.CPUMS) * time.Millisecond
	out.PeakTasks, out.PeakRSSKB = r.PeakTasks, r.PeakRSSKB
	out.Lookups = r.Lookups
	out.Limit = r.Limit
	if out.Limit == "" && runErr == nil && out.ExitCode != 0 && hint != "" {
		out.Limit = hint
	}
	switch {
	case runErr != nil:
		if out.Limit == LimitTimeout {
			out.TimedOut = true
		}
		return out, runErr
	case out.Limit == LimitTimeout:
		out.TimedOut = true
		return out, limitError(LimitTimeout, l, timeout)
	case out.Limit != "":
		return out, limitError(out.Limit, l, timeout)
	case r.SetupCode != "":
		return out, result.New(r.SetupCode, r.SetupReason)
	}
	return out, nil
}

// nsStartError explains a helper that could not start: with namespaces,
// the usual cause is a kernel that refuses user namespaces to this user.
func nsStartError(iso Isolation, err error) error {
	if iso != IsolationNamespaces {
		return err
	}
	return result.Wrap(result.PolicyDenied, NamespacesUnavailable, err)
}

// NamespacesUnavailable is the refusal where the kernel will not create
// the namespaces of isolation = "namespaces" for this user.
const NamespacesUnavailable = `isolation = "namespaces" but the kernel refused to create a user namespace for this user. ` +
	`Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 on Debian-based kernels, ` +
	`user.max_user_namespaces greater than 0, and on Ubuntu 23.10+ kernel.apparmor_restrict_unprivileged_userns=0 ` +
	`or an AppArmor profile for this binary that allows userns), or set [terminal.sandbox] isolation = "landlock" ` +
	`to run with Landlock, seccomp and rlimits only (weaker: see docs/terminald.md)`

// stderrWatch passes stderr through and notes which limit the text that
// runtimes and libc print for a refused resource points at (EMFILE, EFBIG,
// ENOMEM), for a command that failed without a limit seen to stop it.
type stderrWatch struct {
	w    interface{ Write([]byte) (int, error) }
	tail []byte
	hint string
}

// stderrHints are matched case-insensitively, first match wins.
var stderrHints = []struct{ text, limit string }{
	{"too many open files", LimitOpenFiles},
	{"file too large", LimitFileSize},
	{"cannot allocate memory", LimitMemory},
	{"memoryerror", LimitMemory},
	{"out of memory", LimitMemory},
}

func (e *stderrWatch) Write(p []byte) (int, error) {
	if e.hint == "" {
		buf := append(e.tail, p...)
		for _, h := range stderrHints {
			if containsFold(buf, h.text) {
				e.hint = h.limit
				break
			}
		}
		if len(buf) > 32 {
			buf = buf[len(buf)-32:]
		}
		e.tail = append(e.tail[:0], buf...)
	}
	if e.w == nil {
		return len(p), nil
	}
	return e.w.Write(p)
}

func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		ok := true
		for j := 0; j < len(s); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != s[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Preflight is the startup check: it refuses a Landlock mode the kernel
// cannot honour ("required" without Landlock), an isolation or network
// mode that is unknown or impossible, and namespaces isolation where the
// kernel will not create the namespaces for this user (it starts a helper
// in them once). It returns the confinement commands will get.
func Preflight(mode Mode, iso Isolation, net NetMode) (string, error) {
	p, err := plan(mode, iso, net)
	if err != nil {
		return "", err
	}
	if p.abi == 0 || p.iso != IsolationNamespaces {
		return p.confinement, nil
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", result.Wrap(result.InternalError, errSetup+": the control socket could not be created", err)
	}
	ctl := os.NewFile(uintptr(pair[0]), "sandbox-control")
	defer ctl.Close()
	theirs := os.NewFile(uintptr(pair[1]), "sandbox-control-helper")
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		theirs.Close()
		return "", result.Wrap(result.InternalError, errSetup+": /dev/null could not be opened", err)
	}
	cmd := &proc{path: "/proc/self/exe", argv: []string{helperArg0}, env: helperEnv,
		files: []*os.File{devnull, devnull, devnull, theirs}, sys: helperAttr(p.iso, p.net, nil)}
	c, err := launch(cmd)
	devnull.Close()
	theirs.Close()
	if err != nil {
		return "", nsStartError(p.iso, err)
	}
	msg, _ := json.Marshal(helperConfig{Probe: true})
	_, werr := unix.Write(pair[0], msg)
	buf := make([]byte, 4096)
	n, rerr := unix.Read(pair[0], buf)
	<-c.exited
	_, _ = c.reap()
	if werr != nil || rerr != nil || n <= 0 {
		return "", result.New(result.InternalError, errSetup+": the sandbox helper did not answer its start-up probe")
	}
	return p.confinement, nil
}
