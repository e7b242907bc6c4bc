package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// init turns this binary into the sandbox helper when it was started under
// helperArg0 (only runConfined does that). It runs before main and before
// the init functions of packages that do not depend on this one, and it
// never returns in helper mode. Every binary that links the package (the
// servers, and the test binaries) can therefore serve as its own helper.
func init() {
	if len(os.Args) == 1 && os.Args[0] == helperArg0 {
		os.Exit(helperMain())
	}
}

const (
	ctlFD    = 3
	stdoutFD = 4
	stderrFD = 5
	jailFD   = 6
)

// watchInterval is how often the watchdog counts the command's tasks and
// resident memory (twice that with landlock isolation, which reads the
// host's whole /proc).
const watchInterval = 25 * time.Millisecond

// helperMain is the helper: read the instructions, build the view, start
// the command, supervise it, answer, exit. Its exit ends every process
// left in its PID namespace.
func helperMain() int {
	// Nothing in the sandbox may read this process's memory or /proc files.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// The descriptors the server handed over are the helper's alone: the
	// command gets stdout and stderr as 1 and 2 and nothing else, never
	// the control socket on which it could forge the helper's answer.
	for fd := ctlFD; fd <= jailFD; fd++ {
		unix.CloseOnExec(fd)
	}
	// 4 and 5 only hold the places of the numbers that follow: each
	// command's output descriptors come with the command.
	unix.Close(stdoutFD)
	unix.Close(stderrFD)
	// No signal handling of its own (os/signal is initialised late, see
	// proc): the command cannot signal the helper, as Landlock scopes
	// signals to the command's domain (ABI 6 and later); on older kernels a
	// command that signals it ends its own run, nothing more.
	msg, ok := readMsg(ctlFD)
	if !ok {
		return 2
	}
	var cfg helperConfig
	if err := json.Unmarshal(msg, &cfg); err != nil {
		return 2
	}
	for i := range cfg.Idmapped {
		unix.CloseOnExec(idmapFD0 + i)
	}
	closeInheritedOnExec(idmapFD0 + len(cfg.Idmapped))
	h := &helper{cfg: cfg, outFD: -1, errFD: -1, stdinFD: -1, mq: -1, mqDir: -1, shmDir: -1, runLimit: runLimit()}
	if cfg.Probe {
		_, _ = unix.Write(ctlFD, []byte(`{}`))
		return 0
	}
	answer := func(r helperResult) {
		b, _ := json.Marshal(r)
		_, _ = unix.Write(ctlFD, b)
	}
	f, err := h.setup()
	if err != nil {
		answer(failResult(err))
		return 0
	}
	answer(helperResult{})
	// The commands: one message each, read, started, supervised and
	// answered by the forker. After a command's answer the helper serves
	// another only when the answer said it may (reuse_linux.go) and a
	// second message, once what the command left is cleared, says it is
	// ready (as the setup's answer did); otherwise it exits, which ends
	// its namespaces.
	if err := f.wait(); err != nil {
		if _, _, ok := recvCommand(ctlFD); ok {
			answer(failResult(err))
		}
		return 0
	}
	for runs := 1; ; runs++ {
		code, again := f.serve(runs, answer)
		if !again {
			return code
		}
		// Cleared after the answer, off the command's time; the server
		// hands the helper another command only once it said it is ready.
		if !h.resetForNext() {
			answer(failResult(failf(result.InternalError, errSetup+": what the last command left could not be cleared")))
			return 0
		}
		answer(helperResult{})
	}
}

// readMsg reads one control message into a buffer of its size, at most
// maxMsg: a buffer of maxMsg, zeroed and faulted in by every helper, cost
// more than the message itself (a few KiB). ok is false once the server
// has closed the socket, or for a message longer than maxMsg.
func readMsg(fd int) (msg []byte, ok bool) {
	var peek [1]byte
	for {
		// MSG_TRUNC returns the whole message's length (sequenced-packet
		// sockets, Linux 3.4 and later), MSG_PEEK leaves it queued.
		n, _, _, _, err := unix.Recvmsg(fd, peek[:], nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 || n > maxMsg {
			return nil, false
		}
		msg = make([]byte, n)
		for {
			m, err := unix.Read(fd, msg)
			if err == unix.EINTR {
				continue
			}
			return msg, err == nil && m == n
		}
	}
}

type helper struct {
	cfg helperConfig
	run helperRun

	stdinFD int // the command's stdin passed with the command, -1: /dev/null
	// outFD and errFD are the write ends of the command's stdout and
	// stderr, passed with each command.
	outFD, errFD int
	// jailClosed: jailFD (landlock isolation's way into the jail) was
	// closed once the first command was in its working directory.
	jailClosed bool
	// mq is a detached mount of the IPC namespace's POSIX message queues
	// (reuse_linux.go), -1 when none could be made.
	mq int
	// mqDir and shmDir are the message queue mount and the view's
	// /dev/shm, opened for reading at the first clearing (emptyDirs), -1
	// before.
	mqDir, shmDir int
	// runLimit is how many commands this helper serves at most (drawn by
	// runLimit at its start; reuse_linux.go).
	runLimit int

	mu        sync.Mutex
	limit     string
	cancelled bool
	proxyFD   int
	peakTasks int
	peakRSSKB int64
	mem       *memWatch // memory outside resident sets (memwatch_linux.go)
	f         *forker   // the confined thread that starts the commands
	oomAdj    *int      // the helper's oom_score_adj, read once (shielded)
	dns       *lookups  // the names the command looked up (dns_linux.go)
}

// setupFail is a setup error carried to the server.
type setupFail struct {
	code   result.Code
	reason string
}

func (e *setupFail) Error() string { return e.reason }

func failf(code result.Code, format string, a ...any) error {
	return &setupFail{code, fmt.Sprintf(format, a...)}
}

func (h *helper) setLimit(l string) {
	h.mu.Lock()
	if h.limit == "" {
		h.limit = l
	}
	h.mu.Unlock()
}

// setup builds what does not depend on the command: the view, the
// loopback, the proxy relay, the Landlock ruleset and the confined forker
// thread. A prepared helper has done all of this before its command
// arrives.
func (h *helper) setup() (*forker, error) {
	cfg := &h.cfg
	h.mem = newMemWatch(cfg) // before the view hides the memory cgroup
	if cfg.Isolation == IsolationNamespaces {
		counters, err := openCounters(cfg.Counters)
		if err != nil {
			return nil, err
		}
		if err := h.buildView(); err != nil {
			counters.close()
			return nil, err
		}
		if err := counters.write(); err != nil {
			return nil, err
		}
		if cfg.Net != NetAllow {
			if err := loopbackUp(); err != nil {
				return nil, failf(result.InternalError, errSetup+": the command's loopback could not be brought up")
			}
		}
		if cfg.Net == NetProxy {
			if err := h.startRelay(); err != nil {
				return nil, err
			}
		}
		if cfg.Net != NetAllow {
			h.startResolver()
		}
	} else {
		// Orphans of the command are re-parented here, so they can be ended.
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	if err := h.setupReuse(); err != nil {
		return nil, err
	}
	rs, err := h.ruleset()
	if err != nil {
		return nil, err
	}
	return h.startForker(rs), nil
}

func failResult(err error) helperResult {
	var f *setupFail
	if errors.As(err, &f) {
		return helperResult{SetupCode: f.code, SetupReason: f.reason}
	}
	code, reason := result.Classify(err)
	return helperResult{SetupCode: code, SetupReason: reason}
}

// bind is one mount of the view.
type bind struct {
	src  string // a path the helper can open now (host view)
	fd   int    // O_PATH descriptor of the source
	tree int    // detached copy of the source's mount tree (open_tree)
	dst  string // the path inside the view
	rw   bool
	dir  bool
	link string // for a read path that is a symbolic link: its target
	data []byte // a small read-only file copied into the view, not mounted
	perm uint32
}

// copyMax is the largest read-only file copied into the view rather than
// bind-mounted: the dozen small /etc files (ld.so.cache, passwd, hosts...)
// cost a mount each otherwise. The copy is what the file held when the
// helper was set up, and it is read-only in the view like a mount.
const copyMax = 1 << 20

// buildView mounts the command's filesystem: a tmpfs root holding only the
// jail, HOME, TMPDIR (also at /tmp), the writable caches, the read paths
// (read-only), a minimal /dev and a /proc of the new PID namespace; then it
// pivots into it and detaches the host's tree. Every mount is nosuid, and
// all but the device nodes nodev.
//
// The steps run in this order, each in its own function: gather the
// sources (viewBinds), copy each as a detached mount tree while the host's
// tree is still visible (cloneSources, cloneDevNodes), mount the new root
// and attach everything to it (populateView), pivot into it (enterView),
// and check that the jail in the view is the directory the server opened.
func (h *helper) buildView() error {
	cfg := &h.cfg
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return failf(result.InternalError, errSetup+": mount propagation could not be made private")
	}
	if cfg.Net == NetProxy {
		fd, err := unix.Open(cfg.ProxySocket, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return failf(result.InternalError, errSetup+": the proxy's socket cannot be opened")
		}
		h.proxyFD = fd
	}
	binds, err := h.viewBinds()
	if err != nil {
		return err
	}
	if cfg.Net != NetAllow {
		binds = resolverView(binds)
	}
	h.useIdmapped(binds)
	if err := cloneSources(binds); err != nil {
		return err
	}
	devs, err := cloneDevNodes()
	if err != nil {
		return err
	}
	// The new root is a tmpfs mounted over TMPDIR's path in this mount
	// namespace only; TMPDIR itself was copied above.
	root := cfg.Tmp
	if err := h.populateView(root, binds, devs); err != nil {
		return err
	}
	if err := mountProtected(filepath.Join(root, cfg.Jail), cfg.Protected); err != nil {
		return err
	}
	if err := enterView(root); err != nil {
		return err
	}
	for _, b := range binds {
		if b.fd > 0 {
			unix.Close(b.fd)
		}
		if b.tree > 0 {
			unix.Close(b.tree)
		}
	}
	// The jail in the view must be the directory the server opened.
	fd, err := unix.Open(cfg.Jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return failf(result.Stale, "the jail root changed while the sandbox was being built; nothing ran")
	}
	defer unix.Close(fd)
	if dev, ino, err := identity(fd); err != nil || dev != cfg.JailDev || ino != cfg.JailIno {
		return failf(result.Stale, "the jail root changed while the sandbox was being built; nothing ran")
	}
	return nil
}

// viewBinds gathers every source of the view, parents before children: the
// read paths (but /dev and /proc, which the view has its own of), HOME,
// TMPDIR and the writable caches, the jail, and TMPDIR again at /tmp unless
// a tree of the view lies beneath /tmp. Small read-only files that a
// directory of the view already shows are dropped.
func (h *helper) viewBinds() ([]bind, error) {
	cfg := &h.cfg
	var binds []bind
	var err error
	for _, r := range cfg.ReadPaths {
		if r == "/dev" || strings.HasPrefix(r, "/dev/") || r == "/proc" || strings.HasPrefix(r, "/proc/") {
			continue // the view has its own /dev and /proc
		}
		if binds, err = addBind(binds, r, r, false, false); err != nil {
			return nil, err
		}
	}
	for _, w := range append([]string{cfg.Home, cfg.Tmp}, cfg.Writable...) {
		if binds, err = addBind(binds, w, w, true, true); err != nil {
			return nil, err
		}
	}
	tmpFD := -1
	for _, b := range binds {
		if b.dst == cfg.Tmp && b.rw {
			tmpFD = b.fd
		}
	}
	// The jail is bound from a descriptor this helper opened (a mount of
	// the server's namespace cannot be bound here), after checking that it
	// is the directory the server opened.
	jfd, err := unix.Open(cfg.Jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, failf(result.Stale, "the jail root changed while the sandbox was being built; nothing ran")
	}
	if dev, ino, err := identity(jfd); err != nil || dev != cfg.JailDev || ino != cfg.JailIno {
		return nil, failf(result.Stale, "the jail root changed while the sandbox was being built; nothing ran")
	}
	binds = append(binds, bind{src: cfg.Jail, fd: jfd, dst: cfg.Jail, rw: true, dir: true})
	// /tmp shows TMPDIR too, unless a tree of the view lies beneath /tmp
	// (a state directory there): the alias would cover it.
	underTmp := false
	for _, b := range binds {
		if strings.HasPrefix(b.dst, "/tmp/") {
			underTmp = true
		}
	}
	if !underTmp && tmpFD >= 0 {
		binds = append(binds, bind{src: cfg.Tmp, fd: tmpFD, dst: "/tmp", rw: true, dir: true})
	}
	// A small file that a read-only directory already shows (the target of
	// /etc/localtime under /usr) needs neither a copy nor a mount.
	kept := binds[:0]
	for _, b := range binds {
		if b.data != nil && coveredByDir(binds, b.dst) {
			unix.Close(b.fd)
			continue
		}
		kept = append(kept, b)
	}
	binds = kept
	// Parents before children: a writable tree beneath a read path (or the
	// reverse) is mounted over it.
	sort.SliceStable(binds, func(i, j int) bool { return depth(binds[i].dst) < depth(binds[j].dst) })
	return binds, nil
}

// addBind appends to binds the mount of src at dst: read-only unless rw. A
// missing or unopenable source is skipped, or refused when mustExist. A
// read path that is a symbolic link becomes that link in the view plus a
// bind of what it resolves to; a small read-only regular file is copied
// (data) rather than mounted.
func addBind(binds []bind, src, dst string, rw, mustExist bool) ([]bind, error) {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		if mustExist {
			return binds, failf(result.NotFound, errSetup+": %s does not exist", src)
		}
		return binds, nil
	}
	b := bind{src: src, dst: dst, rw: rw}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK && !rw {
		target, err := os.Readlink(src)
		if err != nil {
			return binds, nil
		}
		b.link = target
		binds = append(binds, b)
		// Make sure what it points to is in the view too.
		resolved, err := filepath.EvalSymlinks(src)
		if err != nil {
			return binds, nil
		}
		src, dst = resolved, resolved
		b = bind{src: src, dst: dst}
	}
	fd, err := unix.Open(src, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if mustExist {
			return binds, failf(result.NotFound, errSetup+": %s cannot be opened", src)
		}
		return binds, nil
	}
	var fst unix.Stat_t
	_ = unix.Fstat(fd, &fst)
	b.fd, b.dir = fd, fst.Mode&unix.S_IFMT == unix.S_IFDIR
	if !rw && fst.Mode&unix.S_IFMT == unix.S_IFREG && fst.Size <= copyMax {
		if data, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && int64(len(data)) == fst.Size {
			b.data, b.perm = data, fst.Mode&0o555|0o444
		}
	}
	return append(binds, b), nil
}

// cloneSources copies every source that is mounted (not a link, not a
// copied file) now, as a detached mount tree with its final flags, before
// the new root hides any of them: a copy made later would include the new
// root itself where a source is an ancestor of its mount point.
func cloneSources(binds []bind) error {
	for i := range binds {
		b := &binds[i]
		if b.link != "" || b.data != nil || b.tree > 0 {
			continue // (or an idmapped copy the server made: useIdmapped)
		}
		t, err := cloneTree(b.fd, b.rw)
		if err != nil {
			return failf(result.InternalError, errSetup+": %s could not be copied into the view", b.dst)
		}
		b.tree = t
	}
	return nil
}

// cloneDevNodes copies the host's devNodes as detached trees (nosuid,
// noexec), by name.
func cloneDevNodes() (map[string]int, error) {
	devs := map[string]int{}
	for _, n := range devNodes {
		fd, err := unix.Open("/dev/"+n, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, failf(result.InternalError, errSetup+": /dev/%s cannot be opened", n)
		}
		t, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return nil, failf(result.InternalError, errSetup+": /dev/%s could not be copied into the view", n)
		}
		_ = unix.MountSetattr(t, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC})
		devs[n] = t
	}
	return devs, nil
}

// populateView mounts the tmpfs root at root and attaches to it every bind
// (links made, small files written, trees moved), /dev, and a /proc of the
// new PID namespace whose kernel-wide knobs are read-only; it names the
// host bastion-sandbox.
func (h *helper) populateView(root string, binds []bind, devs map[string]int) error {
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=16m,nr_inodes=4096"); err != nil {
		return failf(result.InternalError, errSetup+": the root of the command's view could not be mounted")
	}
	in := func(p string) string { return filepath.Join(root, p) }
	for _, b := range binds {
		if err := placeBind(b, in(b.dst)); err != nil {
			return err
		}
	}
	if err := h.buildDev(in("/dev"), devs); err != nil {
		return err
	}
	if err := os.MkdirAll(in("/proc"), 0o555); err != nil {
		return failf(result.InternalError, errSetup+": /proc could not be placed in the view")
	}
	if err := unix.Mount("proc", in("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return failf(result.PolicyDenied, errSetup+": a /proc for the command's PID namespace could not be mounted "+
			"(the kernel refuses it where the host's /proc is partly masked, as in some containers)")
	}
	// Kernel-wide knobs stay read-only even for a process whose user id is
	// the host's root.
	for _, p := range []string{"sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "scsi"} {
		t := in("/proc/" + p)
		if _, err := os.Lstat(t); err == nil {
			if err := unix.Mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err == nil {
				_ = setAttr(t, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
			}
		}
	}
	_ = unix.Sethostname([]byte("bastion-sandbox"))
	_ = unix.Setdomainname([]byte("bastion-sandbox"))
	return nil
}

// placeBind puts b at at (its path under the new root): a symbolic link, a
// copied small file, or its detached tree.
func placeBind(b bind, at string) error {
	if b.link != "" {
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return failf(result.InternalError, errSetup+": %s could not be placed in the view", b.dst)
		}
		_ = os.Symlink(b.link, at)
		return nil
	}
	if b.data != nil {
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return failf(result.InternalError, errSetup+": %s could not be placed in the view", b.dst)
		}
		if err := os.WriteFile(at, b.data, os.FileMode(b.perm)); err != nil {
			return failf(result.InternalError, errSetup+": %s could not be copied into the view", b.dst)
		}
		return nil
	}
	if err := placeTree(b.tree, at, b.dir); err != nil {
		return failf(result.InternalError, errSetup+": %s could not be mounted in the view", b.dst)
	}
	return nil
}

// enterView pivots into root, detaches the host's tree and makes the
// skeleton itself read-only: nothing can be created at /. (Not recursive:
// the mounts on it keep their own flags.)
func enterView(root string) error {
	if err := unix.Chdir(root); err != nil {
		return failf(result.InternalError, errSetup+": the view could not be entered")
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return failf(result.InternalError, errSetup+": the view could not become the root")
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return failf(result.InternalError, errSetup+": the host's tree could not be detached")
	}
	if err := unix.Chdir("/"); err != nil {
		return failf(result.InternalError, errSetup+": the view could not be entered")
	}
	_ = unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV})
	return nil
}

// coveredByDir reports whether a directory bind of binds lies above dst.
func coveredByDir(binds []bind, dst string) bool {
	for _, o := range binds {
		if o.dir && o.link == "" && strings.HasPrefix(dst, strings.TrimSuffix(o.dst, "/")+"/") {
			return true
		}
	}
	return false
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// cloneTree copies the mount tree at fd (recursively) into a detached
// tree with nosuid, nodev and, unless rw, read-only on every mount of it.
func cloneTree(fd int, rw bool) (int, error) {
	t, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, err
	}
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !rw {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attr}); err != nil {
		unix.Close(t)
		return -1, err
	}
	return t, nil
}

// placeTree attaches a detached tree at dst, creating dst (a directory, or
// an empty file for a file source).
func placeTree(tree int, dst string, dir bool) error {
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	}
	return unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// setAttr sets mount attributes on the mount at path and every mount below.
func setAttr(path string, set uint64) error {
	return unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: set})
}

// devNodes are the device nodes of the view's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// buildDev makes the minimal /dev: null, zero, full, random, urandom
// (copies of the host's nodes, attached from devs), the fd, stdin, stdout
// and stderr links, and a private /dev/shm.
func (h *helper) buildDev(dev string, devs map[string]int) error {
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return failf(result.InternalError, errSetup+": /dev could not be placed in the view")
	}
	for _, n := range devNodes {
		err := placeTree(devs[n], filepath.Join(dev, n), false)
		unix.Close(devs[n])
		if err != nil {
			return failf(result.InternalError, errSetup+": /dev/%s could not be mounted in the view", n)
		}
	}
	links := [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}}
	for _, l := range links {
		_ = os.Symlink(l[1], filepath.Join(dev, l[0]))
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err == nil {
		_ = unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%dm", max(16, h.cfg.Limits.MemoryMB)))
	}
	return nil
}

// loopbackUp brings up lo in the command's new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// startRelay listens on the command's own loopback at ProxyPort and joins
// each connection to the proxy's socket, which only this helper can reach
// (it is not in the view; the helper keeps an O_PATH descriptor of it).
func (h *helper) startRelay() error {
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failf(result.InternalError, errSetup+": the proxy relay could not listen on the command's loopback")
	}
	_ = unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if unix.Bind(ln, &unix.SockaddrInet4{Port: ProxyPort, Addr: [4]byte{127, 0, 0, 1}}) != nil || unix.Listen(ln, 64) != nil {
		unix.Close(ln)
		return failf(result.InternalError, errSetup+": the proxy relay could not listen on the command's loopback")
	}
	target := &unix.SockaddrUnix{Name: fmt.Sprintf("/proc/self/fd/%d", h.proxyFD)}
	go func() {
		for {
			c, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
			if err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			if err != nil {
				return
			}
			go func(c int) {
				defer unix.Close(c)
				u, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return
				}
				defer unix.Close(u)
				if unix.Connect(u, target) != nil {
					return
				}
				splice(c, u)
			}(c)
		}
	}()
	return nil
}

// walkBeneath opens the directory rel beneath dirfd one component at a
// time, as openBeneath does with openat2 (which the seccomp filter refuses
// the confined forker, enterDir's thread): no "..", no symbolic link, no
// mount crossed.
func walkBeneath(dirfd int, rel string) (int, error) {
	mnt, err := mountID(dirfd)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			unix.Close(fd)
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		if m, err := mountID(next); err != nil || m != mnt {
			unix.Close(next)
			return -1, unix.EXDEV
		}
		fd = next
	}
	return fd, nil
}

// mountID is the id of the mount fd lies on.
func mountID(fd int) (uint64, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &st); err != nil {
		return 0, err
	}
	return st.Mnt_id, nil
}

// enterDir changes into the working directory: opened beneath the jail in
// the view (no "..", symbolic link or mount crossing), and checked to be
// the very directory the server opened (same device and inode).
func (h *helper) enterDir() error {
	cfg := &h.cfg
	jfd := jailFD
	if cfg.Isolation == IsolationNamespaces {
		fd, err := unix.Open(cfg.Jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return failf(result.Stale, "the jail root changed before the command started; nothing ran")
		}
		defer unix.Close(fd)
		jfd = fd
	}
	dfd := jfd
	run := &h.run
	if run.DirRel != "." {
		fd, err := walkBeneath(jfd, run.DirRel)
		if err != nil {
			return failf(result.Stale, "the working directory changed before the command started; nothing ran")
		}
		defer unix.Close(fd)
		dfd = fd
	} else {
		fd, err := unix.Openat(jfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return failf(result.Stale, "the jail root changed before the command started; nothing ran")
		}
		defer unix.Close(fd)
		dfd = fd
	}
	dev, ino, err := identity(dfd)
	if err != nil || dev != run.DirDev || ino != run.DirIno {
		return failf(result.Stale, "the working directory was replaced before the command started; nothing ran")
	}
	if err := unix.Fchdir(dfd); err != nil {
		return failf(result.InternalError, errSetup+": the working directory could not be entered")
	}
	if !h.jailClosed {
		h.jailClosed = true
		unix.Close(jailFD)
	}
	return nil
}
