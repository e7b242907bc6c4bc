package sandbox

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// A command never runs as the host's root. An unprivileged server can map
// only its own user into the command's user namespace, so its commands
// run as that user. A root server used to map root to root: the command
// then ran as host uid 0 without capabilities, read root-only files in the
// read paths (0600 root is readable to its owner without any capability),
// and was exempt from RLIMIT_NPROC (the kernel exempts the host's root
// user).
//
// With namespaces isolation and a root server the helper's user namespace
// now maps two users, each to itself: root (the helper, which needs it to
// build the view) and the command's user, runIDs: the jail's owner when
// that is not root, otherwise nobody (65534). The locked thread that
// starts the command switches to that user before it drops its last
// capability (dropCapabilities), so the command runs as an unprivileged
// host uid, in a user namespace where it holds nothing.
//
// Its writable trees (the jail, HOME, TMPDIR, the caches) that belong to
// root are handed to the helper as idmapped mounts: the root server copies
// each one (open_tree) and sets MOUNT_ATTR_IDMAP on the copy with a user
// namespace that maps root to the command's user (idmapUserns), so that
// through the copy root's files appear as the command's and the files the
// command creates are stored as root's, the jail's owner. Only a root
// server can do this (CAP_SYS_ADMIN in the initial user namespace), and
// only on a filesystem that supports idmapped mounts (ext4, xfs, btrfs,
// tmpfs since 6.3...); elsewhere the run is refused (errNoIdmap), never
// run as root.

// runIDs are the user and group a command runs as (in the helper's user
// namespace, where they map to the same host ids).
type runIDs struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// nobodyID is the host user and group a command of a root server runs as
// when the jail belongs to root.
const nobodyID = 65534

// commandIDs decides the user a confined command runs as: nil (the
// server's user, mapped to root in the command's namespace) for an
// unprivileged server; for a root server, the jail's owner and group when
// they are not root, nobody otherwise. With landlock isolation (no user
// namespace, no idmapped mounts) a root server's command switches only
// when every writable tree belongs to the one non-root user who owns the
// jail; otherwise it stays uid 0 without capabilities (stated in its
// confinement, see landlockRoot).
func commandIDs(cfg *helperConfig) *runIDs {
	if os.Getuid() != 0 {
		return nil
	}
	var st unix.Stat_t
	if unix.Stat(cfg.Jail, &st) != nil {
		// (The run fails on the same check in staticConfig; never root.)
		return &runIDs{UID: nobodyID, GID: nobodyID}
	}
	ids := &runIDs{UID: int(st.Uid), GID: int(st.Gid)}
	if cfg.Isolation == IsolationLandlock {
		if ids.UID == 0 {
			return nil
		}
		for _, p := range append([]string{cfg.Home, cfg.Tmp}, cfg.Writable...) {
			if unix.Stat(p, &st) != nil || int(st.Uid) != ids.UID {
				return nil
			}
		}
		return ids
	}
	if ids.UID == 0 {
		ids.UID = nobodyID
	}
	if ids.GID == 0 {
		ids.GID = nobodyID
	}
	return ids
}

// errNoIdmap refuses a run whose root-owned writable tree cannot be
// idmapped: the command would have to run as root to use it.
var errNoIdmap = result.New(result.PolicyDenied,
	"a command of a server running as root runs as an unprivileged user, and the jail (or HOME, TMPDIR or a cache) "+
		"belongs to root on a filesystem without idmapped mounts; nothing ran. Give the jail to an unprivileged "+
		"owner (chown -R), or run terminald as that user")

var idmapNS struct {
	sync.Mutex
	fds map[runIDs]int
}

// idmapUserns returns a user namespace (its descriptor, kept for the
// server's life) that maps root to ids: the idmapping of the command's
// root-owned trees. It is made by starting this binary in a new user
// namespace with that mapping and keeping the namespace once it exits.
func idmapUserns(ids runIDs) (int, error) {
	idmapNS.Lock()
	defer idmapNS.Unlock()
	if fd, ok := idmapNS.fds[ids]; ok {
		return fd, nil
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	ours := os.NewFile(uintptr(pair[0]), "idmap-holder")
	theirs := os.NewFile(uintptr(pair[1]), "idmap-holder-child")
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		ours.Close()
		theirs.Close()
		return -1, err
	}
	// The child is the helper, waiting for instructions on fd 3 that never
	// come: it exits when ours is closed.
	cmd := &proc{path: "/proc/self/exe", argv: []string{helperArg0}, env: []string{},
		files: []*os.File{devnull, devnull, devnull, theirs},
		sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: unix.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: ids.UID, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: ids.GID, Size: 1}}}}
	c, err := launch(cmd)
	devnull.Close()
	theirs.Close()
	if err != nil {
		ours.Close()
		return -1, err
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", c.cmd.p.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	ours.Close()
	<-c.exited
	_, _ = c.reap()
	if err != nil {
		return -1, err
	}
	if idmapNS.fds == nil {
		idmapNS.fds = map[runIDs]int{}
	}
	idmapNS.fds[ids] = fd
	return fd, nil
}

// idmapFD0 is the helper's first descriptor of an idmapped tree; the
// others follow in the order of helperConfig.Idmapped.
const idmapFD0 = jailFD + 1

// idmappedTrees copies, for a root server whose command runs as ids, each
// root-owned writable tree of cfg as a detached mount idmapped root→ids
// (nosuid, nodev), and records its source in cfg.Idmapped (TMPDIR twice:
// the view shows it at /tmp too). The caller hands the files to the
// helper from idmapFD0 on and closes them.
func idmappedTrees(cfg *helperConfig) ([]*os.File, error) {
	cfg.Idmapped = nil
	if cfg.RunAs == nil || cfg.Isolation != IsolationNamespaces {
		return nil, nil
	}
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		cfg.Idmapped = nil
		return nil, err
	}
	var nsFD = -1
	for _, src := range append([]string{cfg.Jail, cfg.Home, cfg.Tmp, cfg.Tmp}, cfg.Writable...) {
		var st unix.Stat_t
		if err := unix.Stat(src, &st); err != nil {
			return fail(result.Wrap(result.NotFound, errSetup+": a writable tree of the command does not exist", err))
		}
		if st.Uid != 0 {
			continue // the command's own (or not its to write)
		}
		if nsFD < 0 {
			fd, err := idmapUserns(*cfg.RunAs)
			if err != nil {
				return fail(result.Wrap(result.InternalError, errSetup+": the idmapping of the command's trees could not be made", err))
			}
			nsFD = fd
		}
		t, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fail(result.Wrap(result.InternalError, errSetup+": a writable tree of the command could not be copied", err))
		}
		if dev, ino, err := identity(t); src == cfg.Jail && (err != nil || dev != cfg.JailDev || ino != cfg.JailIno) {
			unix.Close(t)
			return fail(result.New(result.Stale, "the jail root changed while the command was being started; nothing ran"))
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
			Userns_fd: uint64(nsFD)}
		if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			unix.Close(t)
			return fail(errNoIdmap.Wrap(err))
		}
		files = append(files, os.NewFile(uintptr(t), "idmapped-tree"))
		cfg.Idmapped = append(cfg.Idmapped, src)
	}
	return files, nil
}

// useIdmapped gives each writable bind whose source the server handed an
// idmapped copy of that copy (in order: TMPDIR's second copy goes to
// /tmp), so cloneSources does not copy it again; copies left over are
// closed.
func (h *helper) useIdmapped(binds []bind) {
	used := make([]bool, len(h.cfg.Idmapped))
	for i := range binds {
		b := &binds[i]
		if !b.rw || !b.dir || b.link != "" {
			continue
		}
		for j, src := range h.cfg.Idmapped {
			if !used[j] && src == b.src {
				used[j], b.tree = true, idmapFD0+j
				break
			}
		}
	}
	for j := range used {
		if !used[j] {
			unix.Close(idmapFD0 + j)
		}
	}
}

// switchIDs makes the calling thread (the forker, still holding its
// capabilities in the helper's user namespace) ids: no supplementary
// groups, then the group, then the user. Raw system calls: they change
// this thread alone (the libc and Go wrappers change every thread).
func switchIDs(ids *runIDs) error {
	if ids == nil {
		return nil
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return failf(result.InternalError, errSetup+": the command's supplementary groups could not be dropped")
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(ids.GID), uintptr(ids.GID), uintptr(ids.GID)); e != 0 {
		return failf(result.InternalError, errSetup+": the command's group could not be set")
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(ids.UID), uintptr(ids.UID), uintptr(ids.UID)); e != 0 {
		return failf(result.InternalError, errSetup+": the command's user could not be set")
	}
	return nil
}

// runsAs is the confinement's note of the host user a command runs as.
func runsAs(cfg *helperConfig) string {
	if cfg.RunAs != nil {
		return fmt.Sprintf("; runs as host uid %d", cfg.RunAs.UID)
	}
	if os.Getuid() == 0 {
		return "; runs as host uid 0 without capabilities (landlock isolation: a writable tree belongs to root)"
	}
	return fmt.Sprintf("; runs as host uid %d", os.Getuid())
}
