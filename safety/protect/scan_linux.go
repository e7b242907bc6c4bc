package protect

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Stat is what a snapshot keeps of one protected path: enough to tell
// that it was replaced (another inode), changed (same inode, other size,
// times or mode) or removed.
type Stat struct {
	Dev, Ino    uint64
	Mode        uint32
	Size        int64
	Mtime, Ctim int64 // nanoseconds
}

// Found is one protected path that exists in a snapshot.
type Found struct {
	Rel   string
	Entry Entry
	Stat  Stat
	// Data is the content of a regular file or the target of a symbolic
	// link, kept when the snapshot was taken with backups (BackupMax).
	Data   []byte
	backed bool
}

// Snapshot is what of a tree's protected paths exists at one moment.
type Snapshot struct {
	Paths map[string]Found
	// Dirs counts the directories walked (the scan's cost).
	Dirs int
}

// Top returns the protected paths of the snapshot that no other path of
// it lies beneath, sorted: what a sandbox makes read-only.
func (s *Snapshot) Top() []Found {
	var out []Found
	for _, f := range s.Paths {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	kept := out[:0]
	for _, f := range out {
		if len(kept) > 0 && strings.HasPrefix(f.Rel, kept[len(kept)-1].Rel+"/") {
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

// NotScanned names the directories Scan does not enter (outside a
// protected tree): no tool looks for git, editor, direnv or agent-client
// configuration inside installed JavaScript packages (VS Code's repository
// scan skips node_modules too), packages do ship such files, and a
// node_modules tree is often the largest part of a project by far.
const NotScanned = "node_modules"

// Scan limits: a tree deeper than maxDepth, or a backup larger than
// BackupMax in all, makes Scan fail rather than answer incompletely.
const (
	maxDepth = 4096
	// BackupMax bounds the bytes a snapshot with backups keeps.
	BackupMax = 16 << 20
	// maxConfig bounds the bytes read of a repository's config for core.hooksPath.
	maxConfig = 1 << 20
)

// ErrTooLarge is the refusal of a scan that would be incomplete.
var ErrTooLarge = result.New(result.LimitExceeded,
	"the protected paths of the jail could not be checked completely (the tree is deeper than 4096 levels, "+
		"or its protected files hold more than 16 MiB to keep a copy of); nothing ran")

// Scan walks the tree open at dirfd (whose absolute path is top) and
// returns its protected paths. Inside a repository's .git it enters only
// directories that can hold a protected path. The directory a
// repository's core.hooksPath names, when it lies in the tree, is
// protected as a Tree too. With backup, the content of every protected
// regular file and the target of every protected link are kept (at most
// BackupMax bytes in all), so a change can be undone.
func (s *Set) Scan(dirfd int, top string, backup bool) (*Snapshot, error) {
	snap := &Snapshot{Paths: map[string]Found{}}
	w := &walker{set: s, snap: snap, backup: backup}
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, result.Wrap(result.InternalError, "the jail could not be opened to check its protected paths", err)
	}
	if err := w.dir(fd, nil, nil); err != nil {
		return nil, err
	}
	for _, repo := range w.repos {
		hp := hooksPath(dirfd, repo)
		if hp == "" {
			continue
		}
		var rel string
		if filepath.IsAbs(hp) {
			r, err := filepath.Rel(top, filepath.Clean(hp))
			if err != nil || r == ".." || strings.HasPrefix(r, "../") {
				continue // outside the tree: the command cannot write there
			}
			rel = filepath.ToSlash(r)
		} else {
			rel = path.Clean(path.Join(path.Dir(repo), hp))
			if rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
		}
		e := Entry{Pattern: rel, Kind: Tree, Trigger: "the hooks directory a repository's core.hooksPath names: git runs its hooks on commit, checkout and push"}
		if err := w.add(dirfd, rel, e); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

type walker struct {
	set    *Set
	snap   *Snapshot
	backup bool
	bytes  int
	repos  []string // rel of each .git directory found
}

// dir lists the directory open at fd (closing it), records its protected
// entries and descends.
func (w *walker) dir(fd int, parts []string, inTree *Entry) error {
	if len(parts) > maxDepth {
		unix.Close(fd)
		return ErrTooLarge
	}
	w.snap.Dirs++
	f := os.NewFile(uintptr(fd), "dir")
	ents, err := f.ReadDir(-1)
	if err != nil && len(ents) == 0 {
		f.Close()
		return nil // unreadable: nothing the command could have put there is readable by a tool either
	}
	defer f.Close()
	for _, de := range ents {
		name := de.Name()
		cp := append(append([]string(nil), parts...), name)
		rel := strings.Join(cp, "/")
		e, hit := Entry{}, false
		if inTree != nil {
			e, hit = *inTree, true
		} else {
			e, hit = w.set.Match(rel)
		}
		isDir := de.Type()&os.ModeDir != 0
		if hit {
			if err := w.record(fd, name, rel, e); err != nil {
				return err
			}
		}
		if name == ".git" && isDir && inTree == nil {
			w.repos = append(w.repos, rel)
		}
		if !isDir {
			continue
		}
		var sub *Entry
		switch {
		case inTree != nil:
			sub = inTree
		case hit && e.Kind == Tree:
			sub = &e
		case !w.set.mayHoldProtected(cp) || name == NotScanned:
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or not enterable
		}
		if err := w.dir(cfd, cp, sub); err != nil {
			return err
		}
	}
	return nil
}

// record stats name beneath fd and keeps it (with its backup).
func (w *walker) record(fd int, name, rel string, e Entry) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil
	}
	f := Found{Rel: rel, Entry: e, Stat: statOf(&st)}
	if w.backup {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if w.bytes+int(st.Size) > BackupMax {
				return ErrTooLarge
			}
			data, err := readAt(fd, name, st.Size)
			if err == nil {
				f.Data, f.backed = data, true
				w.bytes += len(data)
			}
		case unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			if n, err := unix.Readlinkat(fd, name, buf); err == nil {
				f.Data, f.backed = buf[:n], true
			}
		case unix.S_IFDIR:
			f.backed = true
		}
	}
	w.snap.Paths[rel] = f
	return nil
}

// add records rel (and, for a Tree, all beneath it) under entry e.
func (w *walker) add(dirfd int, rel string, e Entry) error {
	parent, name := path.Split(rel)
	pfd := dirfd
	if parent != "" {
		fd, err := openDirBeneath(dirfd, strings.TrimSuffix(parent, "/"))
		if err != nil {
			return nil
		}
		defer unix.Close(fd)
		pfd = fd
	}
	if err := w.record(pfd, name, rel, e); err != nil {
		return err
	}
	cfd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return w.dir(cfd, strings.Split(rel, "/"), &e)
}

func statOf(st *unix.Stat_t) Stat {
	return Stat{Dev: uint64(st.Dev), Ino: st.Ino, Mode: st.Mode, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctim: st.Ctim.Nano()}
}

// readAt reads the regular file name beneath fd, without following a link.
func readAt(fd int, name string, size int64) ([]byte, error) {
	ffd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(ffd), name)
	defer f.Close()
	buf := make([]byte, 0, size)
	var b bytes.Buffer
	b.Grow(int(size))
	_, err = b.ReadFrom(f)
	return append(buf, b.Bytes()...), err
}

// openDirBeneath opens rel as a directory beneath dirfd: no "..", no
// symbolic link, no magic link.
func openDirBeneath(dirfd int, rel string) (int, error) {
	how := unix.OpenHow{Flags: uint64(unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// hooksPath returns core.hooksPath from the config of the repository
// whose .git directory is rel, or "".
func hooksPath(dirfd int, rel string) string {
	fd, err := openDirBeneath(dirfd, rel)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstatat(fd, "config", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxConfig {
		return ""
	}
	data, err := readAt(fd, "config", st.Size)
	if err != nil {
		return ""
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.Trim(strings.Fields(strings.Trim(line, "[]") + " x")[0], `"`))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && section == "core" && strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
