package protect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// The attempts Diff reports.
const (
	Created  = "create"
	Changed  = "change"
	Replaced = "replace"
	Removed  = "remove"
)

// Diff returns the changes from before to after, topmost first: a path
// beneath one already created, replaced or removed is not listed again.
// Directories count as changed only when their mode changed (their
// entries are listed themselves).
func Diff(before, after *Snapshot) []Change {
	var out []Change
	for rel, a := range after.Paths {
		b, ok := before.Paths[rel]
		switch {
		case !ok:
			out = append(out, Change{Path: rel, Attempted: Created, ProtectedBy: a.Entry.Pattern})
		case b.Stat.Dev != a.Stat.Dev || b.Stat.Ino != a.Stat.Ino || b.Stat.Mode&unix.S_IFMT != a.Stat.Mode&unix.S_IFMT:
			out = append(out, Change{Path: rel, Attempted: Replaced, ProtectedBy: a.Entry.Pattern})
		case a.Stat.Mode != b.Stat.Mode:
			out = append(out, Change{Path: rel, Attempted: Changed, ProtectedBy: a.Entry.Pattern})
		case a.Stat.Mode&unix.S_IFMT != unix.S_IFDIR &&
			(a.Stat.Size != b.Stat.Size || a.Stat.Mtime != b.Stat.Mtime || a.Stat.Ctim != b.Stat.Ctim):
			out = append(out, Change{Path: rel, Attempted: Changed, ProtectedBy: a.Entry.Pattern})
		}
	}
	for rel, b := range before.Paths {
		if _, ok := after.Paths[rel]; !ok {
			out = append(out, Change{Path: rel, Attempted: Removed, ProtectedBy: b.Entry.Pattern})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	kept := out[:0]
	var cover []string
	for _, c := range out {
		covered := false
		for _, p := range cover {
			if strings.HasPrefix(c.Path, p+"/") {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if c.Attempted != Changed {
			cover = append(cover, c.Path)
		}
		kept = append(kept, c)
	}
	return kept
}

// manifestEntry is one line of a quarantine's manifest.json.
type manifestEntry struct {
	N    int    `json:"n"`
	Jail string `json:"jail"`
	Change
	Time time.Time `json:"time"`
}

// Undo puts the tree open at dirfd (absolute path top) back as before
// showed it, for each change: what the command created, changed or put in
// place of a protected path is moved into a new directory beneath qroot
// (the quarantine, outside the tree), and the original is written back
// from before's copy where before kept one. It fills each change's
// Outcome and Quarantine. A change that cannot be undone says why in its
// Outcome; the error is set only when the quarantine itself cannot be made.
func Undo(dirfd int, top string, changes []Change, before *Snapshot, qroot string) ([]Change, error) {
	if len(changes) == 0 {
		return changes, nil
	}
	run := time.Now().UTC().Format("20060102T150405.000000000")
	qdir := filepath.Join(qroot, run)
	if err := os.MkdirAll(qdir, 0o700); err != nil {
		return changes, result.Wrap(result.InternalError, "the quarantine directory could not be created", err)
	}
	qfd, err := unix.Open(qdir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return changes, result.Wrap(result.InternalError, "the quarantine directory could not be opened", err)
	}
	defer unix.Close(qfd)
	var manifest []manifestEntry
	for i := range changes {
		c := &changes[i]
		var outcome []string
		if c.Attempted != Removed {
			n := len(manifest) + 1
			if err := moveOut(dirfd, c.Path, qfd, strconv.Itoa(n)); err != nil {
				c.Outcome = "could not be moved out of the jail: " + result.Reason(err)
				continue
			}
			c.Quarantine = run + "/" + strconv.Itoa(n)
			manifest = append(manifest, manifestEntry{N: n, Jail: top, Change: *c, Time: time.Now().UTC()})
			outcome = append(outcome, "moved to quarantine")
		}
		if c.Attempted != Created {
			if err := restore(dirfd, c.Path, before); err != nil {
				outcome = append(outcome, "the original could not be restored ("+err.Error()+")")
			} else {
				outcome = append(outcome, "original restored")
			}
		}
		c.Outcome = strings.Join(outcome, "; ")
	}
	if len(manifest) > 0 {
		b, _ := json.MarshalIndent(manifest, "", "  ")
		if err := os.WriteFile(filepath.Join(qdir, "manifest.json"), b, 0o600); err != nil {
			return changes, result.Wrap(result.InternalError, "the quarantine manifest could not be written", err)
		}
	} else {
		_ = os.Remove(qdir)
	}
	return changes, nil
}

// moveOut moves rel (beneath dirfd) to name beneath qfd, never following
// a link and never replacing anything; across filesystems it copies,
// then removes.
func moveOut(dirfd int, rel string, qfd int, name string) error {
	parent, base := path.Split(rel)
	pfd := dirfd
	if parent != "" {
		fd, err := openDirBeneath(dirfd, strings.TrimSuffix(parent, "/"))
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	err := unix.Renameat2(pfd, base, qfd, name, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EXDEV) {
		return err
	}
	if err := copyAt(pfd, base, qfd, name, 0); err != nil {
		return err
	}
	return removeAt(pfd, base, 0)
}

// copyAt copies the entry name beneath sfd to dname beneath dfd:
// directories, regular files and links; other kinds are left out.
func copyAt(sfd int, name string, dfd int, dname string, depth int) error {
	if depth > maxDepth {
		return ErrTooLarge
	}
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		data, err := readAt(sfd, name, st.Size)
		if err != nil {
			return err
		}
		return writeAt(dfd, dname, data, st.Mode&0o777)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(sfd, name, buf)
		if err != nil {
			return err
		}
		return unix.Symlinkat(string(buf[:n]), dfd, dname)
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dfd, dname, 0o700); err != nil {
			return err
		}
		cs, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(cs), name)
		defer f.Close()
		cd, err := unix.Openat(dfd, dname, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(cd)
		names, _ := f.Readdirnames(-1)
		for _, n := range names {
			if err := copyAt(cs, n, cd, n, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeAt removes the entry name beneath fd and all beneath it, never
// following a link; a directory it cannot enter or empty is made 0700 first.
func removeAt(fd int, name string, depth int) error {
	if depth > maxDepth {
		return ErrTooLarge
	}
	err := unix.Unlinkat(fd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		_ = unix.Fchmodat(fd, name, 0o700, 0)
		cfd, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	_ = unix.Fchmod(cfd, 0o700)
	f := os.NewFile(uintptr(cfd), name)
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if err := removeAt(cfd, n, depth+1); err != nil {
			f.Close()
			return err
		}
	}
	f.Close()
	return unix.Unlinkat(fd, name, unix.AT_REMOVEDIR)
}

// writeAt creates name beneath fd (it must not exist) holding data.
func writeAt(fd int, name string, data []byte, perm uint32) error {
	wfd, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(wfd), name)
	_, werr := f.Write(data)
	_ = unix.Fchmod(wfd, perm)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// restore writes back rel and everything before held beneath it, from
// before's copies.
func restore(dirfd int, rel string, before *Snapshot) error {
	var rels []string
	for r := range before.Paths {
		if r == rel || strings.HasPrefix(r, rel+"/") {
			rels = append(rels, r)
		}
	}
	if len(rels) == 0 {
		return errors.New("it did not exist before")
	}
	if before.Paths[rel].Entry.Kind == Pin {
		// A skeleton rebuilt from the protected files alone would not be
		// the repository: its objects and refs went wherever the command
		// moved them.
		return errors.New("a repository's .git is not rebuilt from copies; the command moved or removed the original, which is not in the jail's .git any more")
	}
	sort.Strings(rels)
	for _, r := range rels {
		f := before.Paths[r]
		if !f.backed {
			return errors.New("no copy was kept: the kernel should have refused the change")
		}
		parent, base := path.Split(r)
		pfd := dirfd
		if parent != "" {
			fd, err := openDirBeneath(dirfd, strings.TrimSuffix(parent, "/"))
			if err != nil {
				return fmt.Errorf("its directory %s is gone", strings.TrimSuffix(parent, "/"))
			}
			pfd = fd
		}
		var err error
		switch f.Stat.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			err = unix.Mkdirat(pfd, base, f.Stat.Mode&0o7777)
			if errors.Is(err, unix.EEXIST) {
				err = nil
			}
		case unix.S_IFLNK:
			err = unix.Symlinkat(string(f.Data), pfd, base)
		case unix.S_IFREG:
			err = writeAt(pfd, base, f.Data, f.Stat.Mode&0o7777)
		}
		if pfd != dirfd {
			unix.Close(pfd)
		}
		if err != nil {
			return fmt.Errorf("%s could not be written back", r)
		}
	}
	return nil
}
