package sandbox

import (
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/protect"
	"github.com/bastion-mcp/bastion/safety/result"
)

// guard is the protected-path check of one run (Spec.Protect): a
// snapshot of the jail's protected paths before the command, and after
// it the undoing of whatever the command created, changed or removed
// there, before the answer.
type guard struct {
	run   *protect.Run
	qdir  string
	fd    int
	ready *protect.Snapshot
}

// startGuard opens the jail (checking it is the directory the run was
// planned for) and begins its check (protect.Set.Begin): the snapshot,
// with a copy of each protected file, that the command is held to,
// shared with the commands already running in the jail. Nil without
// Spec.Protect.
func startGuard(s *Spec, dev, ino uint64) (*guard, error) {
	if s.Protect == nil {
		return nil, nil
	}
	fd, err := unix.Open(s.JailRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, result.Wrap(result.NotFound, "the jail root cannot be opened", err)
	}
	if d, i, err := identity(fd); err != nil || (dev != 0 && (d != dev || i != ino)) {
		unix.Close(fd)
		return nil, result.New(result.Stale, "the jail root changed while the command was being started; nothing ran")
	}
	run, err := s.Protect.Begin(fd, s.JailRoot)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &guard{run: run, qdir: s.QuarantineDir, fd: fd, ready: run.Baseline()}, nil
}

// finish scans again, undoes every change (Outcome.Protected) and closes
// the jail.
func (g *guard) finish(out *Outcome) {
	if g == nil {
		return
	}
	defer unix.Close(g.fd)
	changes, err := g.run.Finish(g.qdir)
	out.Protected = changes
	if err == nil {
		return
	}
	if len(changes) == 0 {
		out.Protected = []protect.Change{{Path: ".", Attempted: "unknown", Outcome: "the protected paths could not be checked after the command: " + result.Reason(err)}}
		return
	}
	for i := range out.Protected {
		if out.Protected[i].Outcome == "" {
			out.Protected[i].Outcome = "left in the jail: " + result.Reason(err)
		}
	}
}

// protectedMount is one protected path the helper mounts over itself in
// the command's view: read-only, or (a Pin, a repository's .git) pinned
// in place, so it cannot be renamed or removed.
type protectedMount struct {
	Rel string `json:"rel"`
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	Pin bool   `json:"pin,omitempty"`
}

// mountsOf chooses the mounts for a snapshot: every Pin, and every other
// protected path that no other non-Pin protected path lies above,
// directories and regular files only (a symbolic link cannot be mounted
// over; its change is undone after the command), parents first.
func mountsOf(snap *protect.Snapshot) []protectedMount {
	var rels []string
	for rel := range snap.Paths {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	var out []protectedMount
	var ro []string
	for _, rel := range rels {
		f := snap.Paths[rel]
		t := f.Stat.Mode & unix.S_IFMT
		if t != unix.S_IFDIR && t != unix.S_IFREG {
			continue
		}
		pin := f.Entry.Kind == protect.Pin
		covered := false
		for _, p := range ro {
			if strings.HasPrefix(rel, p+"/") {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if !pin {
			ro = append(ro, rel)
		}
		out = append(out, protectedMount{Rel: rel, Dev: f.Stat.Dev, Ino: f.Stat.Ino, Pin: pin})
	}
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].Rel) < depth(out[j].Rel) })
	return out
}

// mountProtected mounts each protected path over itself beneath the
// view's jail (at jail, a path under the new root): opened beneath it
// with no symbolic link, checked to be the inode the snapshot saw, then
// a copy of it is attached on top, read-only unless pinned. A path that
// is gone or another inode now makes the setup STALE: nothing runs.
func mountProtected(jail string, mounts []protectedMount) error {
	if len(mounts) == 0 {
		return nil
	}
	jfd, err := unix.Open(jail, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return failf(result.InternalError, errSetup+": the jail could not be opened in the view")
	}
	defer unix.Close(jfd)
	for _, m := range mounts {
		how := unix.OpenHow{Flags: uint64(unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := unix.Openat2(jfd, m.Rel, &how)
		if err != nil {
			return failf(result.Stale, "the protected path %s changed while the sandbox was being built; nothing ran", m.Rel)
		}
		dev, ino, err := identity(fd)
		if err != nil || dev != m.Dev || ino != m.Ino {
			unix.Close(fd)
			return failf(result.Stale, "the protected path %s changed while the sandbox was being built; nothing ran", m.Rel)
		}
		t, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		if err != nil {
			unix.Close(fd)
			return failf(result.InternalError, errSetup+": the protected path %s could not be mounted read-only", m.Rel)
		}
		attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		if !m.Pin {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		err = unix.MountSetattr(t, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: attr})
		if err == nil {
			err = unix.MoveMount(t, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		}
		unix.Close(t)
		unix.Close(fd)
		if err != nil {
			return failf(result.InternalError, errSetup+": the protected path %s could not be mounted read-only", m.Rel)
		}
	}
	return nil
}

// protectedMounts is the mount list for a run in namespaces isolation:
// from a scan of the jail now (no copies kept). Prepare and runConfined
// compute it the same way, so a prepared helper matches only while the
// jail's protected paths are the same inodes.
func protectedMounts(s *Spec, p runPlan) ([]protectedMount, error) {
	if s.Protect == nil || p.iso != IsolationNamespaces {
		return nil, nil
	}
	fd, err := unix.Open(s.JailRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, result.Wrap(result.NotFound, "the jail root cannot be opened", err)
	}
	defer unix.Close(fd)
	snap, err := s.Protect.Scan(fd, s.JailRoot, false)
	if err != nil {
		return nil, err
	}
	return mountsOf(snap), nil
}
