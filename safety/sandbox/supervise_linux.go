package sandbox

import (
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// ruleset builds the command's Landlock ruleset. With namespaces the paths
// are those of the view, which mirror the host's.
func (h *helper) ruleset() (int, error) {
	cfg := &h.cfg
	s := &Spec{JailRoot: cfg.Jail, TempDir: cfg.Tmp, HomeDir: cfg.Home, WritePaths: cfg.Writable,
		ReadPaths: cfg.ReadPaths, ExecWritable: cfg.ExecWritable, Net: cfg.Net}
	view := cfg.Isolation == IsolationNamespaces
	return buildRuleset(s, cfg.ABI, view)
}

// forker is the locked thread that reads, starts, supervises and answers
// for the commands. It is confined as soon as the helper's setup is done
// (no_new_privs, an empty capability set with bounding and ambient sets
// cleared and securebits locked so that exec as root regains nothing, the
// seccomp filter, the Landlock domain), and then waits for a command: a
// prepared helper has paid for all of that before the command arrives,
// and a helper serving several commands one after another
// (reuse_linux.go) pays for it once. No other thread is woken between the
// command's message and its answer; the main goroutine clears what a
// command left, after its answer (what the confined thread may not do).
type forker struct {
	confined chan error
	go_      chan forkJob
	done     chan forkDone
	// oom carries a command's pid to the main goroutine, which raises its
	// oom_score_adj (raiseOOM); raised says it has.
	oom    chan int
	raised chan struct{}
}

// forkJob is one command for the forker: the helper's runs-th, answered
// with answer.
type forkJob struct {
	runs   int
	answer func(helperResult)
}

// forkDone is how a command ended for the helper: again when the helper
// is to clear what it left and serve another, else code is the helper's
// exit status.
type forkDone struct {
	code  int
	again bool
}

// startForker starts the forker thread for ruleset rs.
func (h *helper) startForker(rs int) *forker {
	f := &forker{confined: make(chan error, 1), go_: make(chan forkJob), done: make(chan forkDone, 1),
		oom: make(chan int, 1), raised: make(chan struct{}, 1)}
	h.f = f
	body := func() {
		if err := h.confine(rs); err != nil {
			f.confined <- err
			return
		}
		f.confined <- nil
		for job := range f.go_ {
			f.done <- h.serveOne(job)
		}
	}
	onLockedThread(body)
	return f
}

// wait returns the forker's confinement's error.
func (f *forker) wait() error { return <-f.confined }

// serve has the forker serve the helper's runs-th command, raising the
// command's oom_score_adj when the forker asks (raiseOOM).
func (f *forker) serve(runs int, answer func(helperResult)) (code int, again bool) {
	f.go_ <- forkJob{runs: runs, answer: answer}
	for {
		select {
		case d := <-f.done:
			return d.code, d.again
		case pid := <-f.oom:
			_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("1000"), 0)
			f.raised <- struct{}{}
		}
	}
}

// shielded reports whether the server lowered the helper's oom_score_adj
// (shieldFromOOM), which its commands inherit: only then must each be
// raised. Lowering it needs CAP_SYS_RESOURCE, which a root server in some
// containers lacks; the helper and its commands then keep the same score,
// and the OOM killer chooses by size, the command that filled the group.
// Read once, at the first command (the server shields the helper before
// it sends one). raiseOOMEnv in the helper's environment (set by tests,
// where the server may lack CAP_SYS_RESOURCE) has it raise them anyway.
func (h *helper) shielded() bool {
	if h.oomAdj == nil {
		b, _ := os.ReadFile("/proc/self/oom_score_adj")
		v, err := strconv.Atoi(string(trimNL(b)))
		h.oomAdj = &v
		if err != nil || os.Getenv(raiseOOMEnv) == "1" {
			v = -1000 // unknown, or asked: raise it
		}
	}
	return *h.oomAdj < 0
}

// raiseOOMEnv=1 in a helper's environment has it raise every command's
// oom_score_adj, shielded or not (shielded).
const raiseOOMEnv = "BASTION_HELPER_RAISE_OOM"

// raiseOOM has the main goroutine set the stopped command pid's
// oom_score_adj to 1000, so that its memory cgroup's OOM killer chooses
// the command, not the helper (shieldFromOOM). Not on the forker: its
// Landlock domain refuses the write (EACCES), and the command ran with
// the helper's score. The forker waits for it (wait) only before letting
// the command go, after the gate.
func (f *forker) raiseOOM(pid int) (wait func()) {
	f.oom <- pid
	return func() { <-f.raised }
}

// serveOne reads a command, starts it in its working directory, supervises
// it until every process is reaped (on this thread, which the command's
// Pdeathsig is tied to) and answers, on the confined forker thread.
func (h *helper) serveOne(job forkJob) forkDone {
	msg, passed, ok := recvCommand(ctlFD)
	h.run = helperRun{}
	if !ok || json.Unmarshal(msg, &h.run) != nil {
		for _, fd := range passed {
			unix.Close(fd)
		}
		return forkDone{code: 2}
	}
	h.takePassed(passed)
	fail := func(err error) forkDone {
		h.closeOutput()
		job.answer(failResult(err))
		return forkDone{}
	}
	if h.outFD < 0 || h.errFD < 0 {
		return fail(failf(result.InternalError, errSetup+": the command came without its output descriptors"))
	}
	if err := h.enterDir(); err != nil {
		return fail(err)
	}
	pid, err := h.forkCommand()
	h.closeOutput()
	if err != nil {
		return fail(err)
	}
	r := h.supervise(pid)
	r.Lookups = h.dns.list()
	if h.mem.hasEvents() {
		// As memcg.settle would, read here where the counter is already
		// open.
		r.OOMRead = true
		if h.mem.oomKilled() && (r.Limit == "" || r.Limit == LimitTimeout) {
			r.Limit = LimitMemory
		}
	}
	r.Reusable = h.reusable(r, job.runs)
	job.answer(r)
	return forkDone{again: r.Reusable}
}

// confine runs on the locked, non-main forker thread.
func (h *helper) confine(rs int) error {
	cfg := &h.cfg
	defer unix.Close(rs)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return failf(result.InternalError, errSetup+": no_new_privs could not be set")
	}
	if err := dropCapabilities(cfg.RunAs); err != nil {
		return err
	}
	if filterAvailable() {
		if err := installFilter(filterFor(cfg.Isolation, cfg.Net)); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); errno != 0 {
		return failf(result.InternalError, errSetup+": the Landlock ruleset could not be enforced")
	}
	return nil
}

// forkCommand starts the command on the forker thread.
func (h *helper) forkCommand() (int, error) {
	// A descriptor of its own per command (a shared one would carry the
	// status flags one command set to the next), opened without os.Open's
	// poller registration.
	devnull, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, failf(result.InternalError, errSetup+": /dev/null could not be opened")
	}
	defer unix.Close(devnull)
	// The child stops right after its execve (PTRACE_TRACEME, the only
	// ptrace request besides PTRACE_DETACH that the filter lets through),
	// before any instruction of the command runs; the limits are then set
	// on it alone and it is let go. Setting them on the helper around the
	// fork would leave the helper unable to raise them back: the hard
	// limits can only be raised with CAP_SYS_RESOURCE in the host's user
	// namespace, and a helper under the command's limits could itself be
	// starved by the command.
	//
	// syscall.ForkExec rather than os.StartProcess: the latter probes for
	// pidfd support with an extra fork on its first use, in every helper.
	stdin := uintptr(devnull)
	if h.stdinFD >= 0 {
		stdin = uintptr(h.stdinFD)
		defer unix.Close(h.stdinFD)
	}
	attr := &syscall.ProcAttr{
		Env:   h.run.Env,
		Files: []uintptr{stdin, uintptr(h.outFD), uintptr(h.errFD)},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Ptrace: true},
	}
	if h.run.TTY && h.stdinFD >= 0 {
		attr.Files = []uintptr{stdin, stdin, stdin}
		ttyAttr(attr.Sys)
	}
	pid, err := syscall.ForkExec(h.run.Path, h.run.Argv, attr)
	if err != nil {
		return 0, startError(&os.PathError{Op: "fork/exec", Path: h.run.Path, Err: err})
	}
	if err := h.limitStopped(pid); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return 0, err
	}
	return pid, nil
}

// capLastCap is the highest capability number the kernel knows.
func capLastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(string(trimNL(b))); err == nil {
			return n
		}
	}
	return 63
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// dropCapabilities empties the calling thread's capability sets for good,
// switching it to runAs (when set) before the last ones go. Without
// CAP_SETPCAP (landlock isolation, server not root) there is nothing to
// drop but the bounding set, which no_new_privs already makes unusable.
func dropCapabilities(runAs *runIDs) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var cur [2]unix.CapUserData
	if err := unix.Capget(&hdr, &cur[0]); err != nil {
		return failf(result.InternalError, errSetup+": the capabilities could not be read")
	}
	has := cur[0].Effective != 0 || cur[1].Effective != 0 || cur[0].Permitted != 0 || cur[1].Permitted != 0
	if has {
		// SECBIT_NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off) and
		// NO_CAP_AMBIENT_RAISE, each with its lock bit.
		const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
			return failf(result.InternalError, errSetup+": the securebits could not be locked")
		}
		// (The bound is read once: as the loop's condition it was read
		// again for each of the 40-odd capabilities.)
		for c, last := 0, capLastCap(); c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
				return failf(result.InternalError, errSetup+": the bounding capability set could not be cleared")
			}
		}
	}
	if err := switchIDs(runAs); err != nil {
		return err
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return failf(result.InternalError, errSetup+": the capabilities could not be dropped")
	}
	return nil
}

// nprocSlack is what RLIMIT_NPROC allows past MaxProcesses: the helper's
// own threads count under the same user.
const nprocSlack = 16

// limitStopped waits for pid's stop after its execve, sets the command's
// rlimits on it and detaches, which lets it run.
func (h *helper) limitStopped(pid int) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || !ws.Stopped() {
			return failf(result.InternalError, errSetup+": the command did not stop for its limits to be set")
		}
		break
	}
	l := h.cfg.Limits
	mb := uint64(1 << 20)
	// RLIMIT_NPROC counts every task of the user in the user namespace:
	// with namespaces that is the command's own (and the helper's), but in
	// the host's namespaces it is every process the user runs (the server,
	// the desktop), so landlock isolation leaves it alone and relies on the
	// watchdog.
	nproc := uint64(unix.RLIM_INFINITY)
	if h.cfg.Isolation == IsolationNamespaces {
		nproc = uint64(l.MaxProcesses + nprocSlack)
	}
	for _, w := range []struct {
		res       int
		soft, hrd uint64
	}{
		{unix.RLIMIT_DATA, uint64(l.MemoryMB) * mb * 5 / 4, uint64(l.MemoryMB) * mb * 5 / 4},
		// A little over the limit, so that the watchdog (which counts the
		// command's tasks only) sees it passed and names it.
		{unix.RLIMIT_NPROC, nproc, nproc},
		{unix.RLIMIT_CPU, uint64(l.CPUSeconds), uint64(l.CPUSeconds) + 1},
		{unix.RLIMIT_FSIZE, uint64(l.MaxFileMB) * mb, uint64(l.MaxFileMB) * mb},
		{unix.RLIMIT_NOFILE, uint64(l.MaxOpenFiles), uint64(l.MaxOpenFiles)},
		{unix.RLIMIT_CORE, 0, 0},
	} {
		var old unix.Rlimit
		if err := unix.Prlimit(pid, w.res, nil, &old); err != nil {
			return failf(result.InternalError, errSetup+": a limit could not be read")
		}
		soft, hard := w.soft, w.hrd
		if old.Max != unix.RLIM_INFINITY && hard > old.Max {
			hard = old.Max
		}
		soft = min(soft, hard)
		if err := unix.Prlimit(pid, w.res, &unix.Rlimit{Cur: soft, Max: hard}, nil); err != nil {
			return failf(result.InternalError, errSetup+": a limit could not be set")
		}
	}
	// The command, not the helper, is the one the OOM killer of the run's
	// memory cgroup chooses (shieldFromOOM), written while the server
	// makes the intent durable.
	raised := func() {}
	if h.cfg.MemEvents != "" && h.f != nil && h.shielded() {
		raised = h.f.raiseOOM(pid)
	}
	// Waited for on every way out: an answer left unread would be taken
	// for the next command's.
	defer func() { raised() }()
	if h.run.Hold {
		// The server's word that the command may run (Spec.Gate): no
		// other message comes before it, as watchCancel is not reading yet.
		if msg, ok := readMsg(ctlFD); !ok || string(msg) != releaseMsg {
			return failf(result.OperationFailed, "the command was not let run; nothing of it ran")
		}
	}
	raised()
	raised = func() {}
	if err := unix.PtraceDetach(pid); err != nil {
		return failf(result.InternalError, errSetup+": the command could not be released")
	}
	return nil
}

// supervise reaps every process until the command is over, enforces the
// timeout and the watchdog, ends everything left, and composes the answer.
func (h *helper) supervise(cmdPid int) helperResult {
	ns := h.cfg.Isolation == IsolationNamespaces
	r := helperResult{Started: true, ExitCode: -1}
	killAll := func() {
		if ns {
			_ = unix.Kill(-1, unix.SIGKILL)
		} else {
			_ = unix.Kill(-cmdPid, unix.SIGKILL)
			_ = unix.Kill(cmdPid, unix.SIGKILL)
			killChildren()
		}
	}
	var stop [2]int
	if err := unix.Pipe2(stop[:], unix.O_CLOEXEC); err == nil {
		go h.watchCancel(killAll, func() { h.terminate(cmdPid) }, stop[0], h.newWatchdog(killAll))
		defer unix.Close(stop[1]) // ends watchCancel, which is not waited for
	} else {
		// No way to hear a cancellation (the helper is out of
		// descriptors): the command is ended at once, as cancelled.
		h.mu.Lock()
		h.cancelled = true
		h.mu.Unlock()
		killAll()
	}
	if h.run.TimeoutMS > 0 {
		t := time.AfterFunc(time.Duration(h.run.TimeoutMS)*time.Millisecond, func() {
			h.setLimit(LimitTimeout)
			killAll()
		})
		defer t.Stop()
	}
	cpu, maxRSS := h.reapAll(cmdPid, killAll, &r)
	return h.compose(r, cpu, maxRSS)
}

// watchCancel waits for cancellation from the server (cancelMsg, or the
// control socket closed) and then ends everything; termMsg has term
// signal the command first (a session's graceful stop). Between messages
// it steps the watchdog every interval. It returns once the run is over
// (its end of the pipe stop is closed, or another message is waiting:
// that is the next command's, left for the main loop, as every message is
// only peeked at first), without the run waiting for it.
//
// It waits through Go's poller (waiter), holding no thread: blocked in
// poll(2) it held the helper's one processor (helperEnv) until the
// runtime's monitor took it back, so the forker, back from wait4 when the
// command ended, waited for that hand-off before it could answer.
func (h *helper) watchCancel(killAll, term func(), stop int, dog *watchdog) {
	defer unix.Close(stop)
	wait := pollWait(stop)
	if w, err := newWaiter(ctlFD, stop); err == nil {
		defer w.close()
		wait = func(deadline time.Time) (ctl, stopped bool, ok bool) {
			fds, err := w.wait(deadline)
			if err != nil {
				return false, false, false
			}
			for _, fd := range fds {
				ctl = ctl || fd == ctlFD
				stopped = stopped || fd == stop
			}
			return ctl, stopped, true
		}
	}
	var buf [16]byte
	next := time.Now().Add(dog.interval())
	for {
		ctl, stopped, ok := wait(next)
		if !ok {
			if time.Now().Before(next) {
				time.Sleep(time.Millisecond) // the wait failed early: never expected; no busy loop
				continue
			}
			dog.step()
			next = time.Now().Add(dog.interval())
			continue
		}
		if stopped {
			return
		}
		if !ctl {
			continue
		}
		n, _, _, _, err := unix.Recvmsg(ctlFD, buf[:], nil, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		msg := string(buf[:max(n, 0)])
		switch {
		case err == nil && n > 0 && msg == termMsg:
			_, _ = unix.Read(ctlFD, buf[:])
			term()
		case err == nil && n > 0 && msg != cancelMsg:
			return // the next command's message: the run is over
		default: // cancelMsg, or the socket closed
			if err == nil && n > 0 {
				_, _ = unix.Read(ctlFD, buf[:])
			}
			h.mu.Lock()
			h.cancelled = true
			h.mu.Unlock()
			killAll()
			return
		}
	}
}

// pollWait is watchCancel's wait where no epoll instance could be made
// (the helper is out of descriptors): poll(2) on this goroutine's thread.
// ok is false once deadline passed with nothing readable.
func pollWait(stop int) func(deadline time.Time) (ctl, stopped bool, ok bool) {
	fds := []unix.PollFd{{Fd: ctlFD, Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	return func(deadline time.Time) (bool, bool, bool) {
		fds[0].Revents, fds[1].Revents = 0, 0
		n, err := unix.Poll(fds, max(int(time.Until(deadline)/time.Millisecond), 0))
		if err != nil {
			if err != unix.EINTR {
				time.Sleep(time.Millisecond) // never expected; no busy loop
			}
			return false, false, true
		}
		if n == 0 {
			return false, false, false
		}
		return fds[0].Revents != 0, fds[1].Revents != 0, true
	}
}

// reapAll waits for every process until none is left, noting the limits
// their deaths point at, the command's own exit in r (and then ending the
// rest), and returns the CPU time and the largest resident set seen.
func (h *helper) reapAll(cmdPid int, killAll func(), r *helperResult) (cpu time.Duration, maxRSS int64) {
	ns := h.cfg.Isolation == IsolationNamespaces
	sweep := make(chan struct{})
	defer close(sweep)
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: nothing left
			return cpu, maxRSS
		}
		if ws.Stopped() {
			// A process that asked to be traced by its parent (the helper,
			// for the command itself) and stopped: it is ended, as the
			// helper traces nothing.
			_ = unix.Kill(pid, unix.SIGKILL)
			continue
		}
		own := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		cpu += own
		maxRSS = max(maxRSS, int64(ru.Maxrss))
		if ws.Signaled() {
			h.noteSignal(ws.Signal(), own)
		}
		if pid == cmdPid {
			h.noteCommandExit(ws, r)
			if ns && unix.Getpid() == 1 && !childrenLeft() {
				return cpu, maxRSS
			}
			killAll()
			if !ns {
				go sweepChildren(sweep)
			}
		}
	}
}

// childrenLeft reports whether the helper has a child left, running or
// not yet reaped, without reaping it. With namespaces the helper is the
// first process of the command's PID namespace: every process of it that
// outlives its parent is re-parented to the helper, so once the command
// is reaped and no child is left, nothing of the run is left either, and
// the kill(-1) is skipped. That kill walks every process of the machine
// (the kernel checks each one's namespace): 26 us of a kept helper's 1 ms
// on a VM running 66 processes, more on a desktop running hundreds.
// Asked with __WALL (clone children too); an error other than ECHILD
// counts as a child left.
func childrenLeft() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		return err != unix.ECHILD
	}
}

// sweepChildren ends, every 2*watchInterval until stop closes, the
// helper's children that are still running once the command is over (in
// landlock isolation, descendants re-parented to the helper as their
// subreaper). It runs beside the reaping, not after each reaped child: a
// scan of /proc per child made reaping a 400-process fork bomb quadratic,
// slower than the helper's backstop on a loaded machine.
func sweepChildren(stop <-chan struct{}) {
	t := time.NewTicker(2 * watchInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			killChildren()
		}
	}
}

// noteSignal records the limit that a process's death by sig (after own
// CPU time) points at.
func (h *helper) noteSignal(sig unix.Signal, own time.Duration) {
	switch sig {
	case unix.SIGXCPU:
		h.setLimit(LimitCPU)
	case unix.SIGXFSZ:
		h.setLimit(LimitFileSize)
	case unix.SIGKILL:
		// A process that ignored SIGXCPU is killed at the hard
		// limit, a second later: its CPU time tells.
		if own >= time.Duration(h.cfg.Limits.CPUSeconds)*time.Second {
			h.setLimit(LimitCPU)
		}
	}
}

// noteCommandExit records the command's exit code or signal in r, and the
// limit an exit status of 128+SIGXCPU or 128+SIGXFSZ (a shell reporting
// its child's death) points at.
func (h *helper) noteCommandExit(ws unix.WaitStatus, r *helperResult) {
	r.ExitCode = ws.ExitStatus()
	if ws.Signaled() {
		r.ExitCode = -1
		r.Signal = unix.SignalName(ws.Signal())
	} else if ws.Exited() {
		switch ws.ExitStatus() {
		case 128 + int(unix.SIGXCPU):
			h.setLimit(LimitCPU)
		case 128 + int(unix.SIGXFSZ):
			h.setLimit(LimitFileSize)
		}
	}
}

// compose completes the answer once every process is gone: the limit seen
// (or, for a command that failed near one, the likely one), cancellation,
// CPU time and peaks.
func (h *helper) compose(r helperResult, cpu time.Duration, maxRSS int64) helperResult {
	l := h.cfg.Limits
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Limit, r.Cancelled = h.limit, h.cancelled
	if r.Limit == LimitTimeout && h.peakTasks >= l.MaxProcesses*3/4 {
		// It ran out of time stuck at the process limit (forks failing,
		// retried): the limit is the cause, the timeout only ended it.
		r.Limit = LimitProcesses
	}
	r.CPUMS = cpu.Milliseconds()
	r.PeakTasks, r.PeakRSSKB = h.peakTasks, h.peakRSSKB
	if r.Limit == "" && (r.ExitCode != 0 || r.Signal != "") {
		// The command failed and no limit was seen to stop it: if it came
		// close to one, that limit is the likely cause (a process refused
		// more memory or another fork fails rather than dies).
		switch {
		case h.peakTasks >= l.MaxProcesses-8:
			r.Limit = LimitProcesses
		case h.peakRSSKB >= int64(l.MemoryMB)*1024*3/4 || maxRSS >= int64(l.MemoryMB)*1024*3/4:
			r.Limit = LimitMemory
		}
	}
	return r
}

// watchdog is the watchdog of namespaces isolation: each step counts the
// tasks, the resident memory (plus the memory memWatch sees outside
// resident sets, and the OOM kills of the run's memory cgroup) and the
// bytes written to disk of every process in the PID namespace (all of
// them are the command's) and ends them all when any passes its limit.
//
// With landlock isolation /proc is the host's: the watchdog counts the
// helper's descendants only (found by parent links; the helper is their
// subreaper, so orphans stay descendants), every 50 ms.
//
// It steps every interval from watchCancel's loop (no goroutine or ticker
// of its own), the first step one interval after the command started: a
// command that ends sooner is never scanned.
type watchdog struct {
	h       *helper
	killAll func()
	ns      bool
	page    int64
	self    int
	procs   map[int]procInfo
	memo    map[int]bool
	disk    *diskWatch
	pids    []int
	tick    int
}

func (h *helper) newWatchdog(killAll func()) *watchdog {
	return &watchdog{h: h, killAll: killAll, ns: h.cfg.Isolation == IsolationNamespaces,
		page: int64(os.Getpagesize() / 1024), self: os.Getpid(), procs: map[int]procInfo{}, memo: map[int]bool{},
		disk: newDiskWatch()}
}

// interval is the time between two steps.
func (d *watchdog) interval() time.Duration {
	if !d.ns {
		return 2 * watchInterval
	}
	return watchInterval
}

// step scans once and ends everything past a limit.
func (d *watchdog) step() {
	h, l := d.h, d.h.cfg.Limits
	tick := d.tick
	d.tick++
	tasks, rss := 0, int64(0)
	clear(d.procs)
	clear(d.memo)
	d.pids = d.pids[:0]
	forEachProc(func(pid int, stat []string) {
		if pid == d.self || len(stat) < 22 {
			return
		}
		ppid, _ := strconv.Atoi(stat[1])
		n, _ := strconv.Atoi(stat[17])
		r, _ := strconv.ParseInt(stat[21], 10, 64)
		d.procs[pid] = procInfo{ppid, n, r * d.page}
	})
	for pid, p := range d.procs {
		if !d.ns && !descends(d.procs, d.memo, pid, d.self) {
			continue
		}
		tasks += p.tasks
		rss += p.rss
		d.pids = append(d.pids, pid)
	}
	// Memory no resident set shows (memwatch_linux.go), and the bytes
	// written to disk every other tick (disk_linux.go).
	rss += h.mem.hiddenKB(d.pids)
	var written int64
	if !d.ns || tick%2 == 0 {
		written = d.disk.total(d.pids)
	}
	h.mu.Lock()
	h.peakTasks = max(h.peakTasks, tasks)
	h.peakRSSKB = max(h.peakRSSKB, rss)
	h.mu.Unlock()
	switch {
	case tasks > l.MaxProcesses:
		h.setLimit(LimitProcesses)
		d.killAll()
	case rss > int64(l.MemoryMB)*1024 || h.mem.oomKilled():
		h.setLimit(LimitMemory)
		d.killAll()
	case written > int64(l.DiskMB)<<20:
		h.setLimit(LimitDisk)
		d.killAll()
	}
}

// procInfo is what the watchdog reads of one process.
type procInfo struct {
	ppid, tasks int
	rss         int64 // KiB
}

// descends reports whether pid has self among its ancestors in procs,
// however deep the chain (memo holds the answers found so far).
func descends(procs map[int]procInfo, memo map[int]bool, pid, self int) bool {
	var chain []int
	ans := false
	for steps := 0; steps <= len(procs); steps++ {
		if v, ok := memo[pid]; ok {
			ans = v
			break
		}
		p, ok := procs[pid]
		if !ok {
			break
		}
		chain = append(chain, pid)
		if p.ppid == self {
			ans = true
			break
		}
		pid = p.ppid
	}
	for _, c := range chain {
		memo[c] = ans
	}
	return ans
}

// forEachProc calls fn with the fields of /proc/PID/stat after the command
// name (index 0 is the state) for every process visible in /proc.
func forEachProc(fn func(pid int, stat []string)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	buf := make([]byte, 1024)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		fd, err := unix.Open("/proc/"+n+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		k, _ := unix.Read(fd, buf)
		unix.Close(fd)
		if k <= 0 {
			continue
		}
		b := buf[:k]
		i := lastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		fn(pid, fields(b[i+2:]))
	}
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

func fields(b []byte) []string {
	var out []string
	start := -1
	for i, c := range b {
		if c == ' ' || c == '\n' {
			if start >= 0 {
				out = append(out, string(b[start:i]))
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, string(b[start:]))
	}
	return out
}

// killChildren ends every child of the helper (landlock isolation: the
// helper is their subreaper, so orphans of the command come here) and the
// process groups they lead.
func killChildren() {
	self := os.Getpid()
	forEachProc(func(pid int, stat []string) {
		if len(stat) < 3 {
			return
		}
		ppid, _ := strconv.Atoi(stat[1])
		pgrp, _ := strconv.Atoi(stat[2])
		if ppid != self {
			return
		}
		if pgrp > 0 && pgrp != unix.Getpgrp() {
			_ = unix.Kill(-pgrp, unix.SIGKILL)
		}
		_ = unix.Kill(pid, unix.SIGKILL)
	})
}

// splice copies both ways between two stream sockets until both
// directions are done, half-closing each as its source ends.
func splice(a, b int) {
	done := make(chan struct{}, 2)
	cp := func(dst, src int) {
		buf := make([]byte, 32<<10)
		for {
			n, err := unix.Read(src, buf)
			if err == unix.EINTR {
				continue
			}
			if n <= 0 || err != nil {
				break
			}
			if !writeAll(dst, buf[:n]) {
				break
			}
		}
		_ = unix.Shutdown(dst, unix.SHUT_WR)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

// writeAll writes p to fd, retrying short writes.
func writeAll(fd int, p []byte) bool {
	for len(p) > 0 {
		n, err := unix.Write(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		p = p[n:]
	}
	return true
}
