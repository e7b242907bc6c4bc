package protect

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
// directories that can hold a protected path, and it never enters
// NotScanned. The directory a repository's core.hooksPath names, when it
// lies in the tree, is protected as a Tree too. With backup, the content
// of every protected regular file and the target of every protected link
// are kept (at most BackupMax bytes in all), so a change can be undone.
//
// A scan costs one stat per directory once the tree is known: the Set
// remembers, per tree, each directory's identity and change time with
// its subdirectories and protected entries, and lists a directory again
// only when it is new, its inode or change time differs, or it changed
// within hotWindow before the previous scan (a change in the same clock
// tick would keep the change time). Creating, removing or renaming an
// entry always changes its directory's change time, which no system call
// can set back, and a directory replaced by a link is seen from its
// parent, checked first; so a protected path cannot appear unseen.
func (s *Set) Scan(dirfd int, top string, backup bool) (*Snapshot, error) {
	snap := &Snapshot{Paths: map[string]Found{}}
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return nil, result.Wrap(result.InternalError, "the jail could not be opened to check its protected paths", err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", top, st.Dev, st.Ino)
	// One scan of a Set at a time: a scan hands the directory
	// descriptors it kept to the next.
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	s.mu.Lock()
	old := s.trees[key]
	s.mu.Unlock()
	if old == nil {
		old = &treeCache{watch: newWatcher()}
	}
	w := &walker{set: s, snap: snap, backup: backup, dirfd: dirfd, old: old,
		cur: &treeCache{dirs: make(map[string]*dirState, len(old.dirs)), files: map[string]Found{}, watch: old.watch}, now: time.Now().UnixNano()}
	if old.watch != nil {
		w.changed = old.watch.drain()
		w.noTrust = old.watch.lost
		old.watch.lost = false
	}
	done, err := w.fromLastWalk(top)
	if err == nil && !done {
		done, err = w.patch(top)
	}
	if err == nil && !done {
		err = w.walk(top)
	}
	if err != nil {
		w.cur.release(old)
		if old.watch != nil {
			// The changes drained for this scan are not in old: the next
			// scan stats every directory.
			old.watch.lost = true
		}
		return nil, err
	}
	if !done {
		// (A scan from the last walk, or patching it, closes what it
		// drops itself.)
		old.release(w.cur)
	}
	s.mu.Lock()
	if s.trees == nil {
		s.trees = map[string]*treeCache{}
	}
	if len(s.trees) >= maxTrees && s.trees[key] == nil {
		for _, t := range s.trees {
			t.release(nil)
			t.watch.close()
		}
		clear(s.trees)
	}
	s.trees[key] = w.cur
	s.mu.Unlock()
	snap.Dirs = w.listed
	return snap, nil
}

// walk visits the whole tree (from what the last scan remembered), then
// the directories the repositories' core.hooksPath names.
func (w *walker) walk(top string) error {
	if err := w.dir("", 0, nil, true); err != nil {
		return err
	}
	slices.Sort(w.repos) // as patch finds them
	hooks := hooksDirs(w.dirfd, top, w.repos)
	for _, rel := range hooks {
		if err := w.add(rel, hooksEntry(rel)); err != nil {
			return err
		}
	}
	w.cur.repos, w.cur.hooks, w.cur.recs, w.cur.complete = w.repos, hooks, w.recs, true
	return nil
}

// fromLastWalk is a scan with nothing changed since the last one (the
// watcher queued no event, and every directory of the last walk is
// watched): the last walk's directories, repositories and protected paths
// stand, and only the protected paths themselves are stat'ed again (and
// each repository's core.hooksPath read again, as a config edited in
// place queues no event). done false: the tree must be walked.
func (w *walker) fromLastWalk(top string) (done bool, err error) {
	old := w.old
	if old.watch == nil || w.noTrust || w.changed != nil || !old.complete || old.unwatched != 0 {
		return false, nil
	}
	if !slices.Equal(hooksDirs(w.dirfd, top, old.repos), old.hooks) {
		return false, nil
	}
	w.cur.dirs, w.cur.held, w.cur.repos, w.cur.hooks = old.dirs, old.held, old.repos, old.hooks
	for _, r := range old.recs {
		if err := w.record(r.rel, r.e); err != nil {
			return false, err // what a walk would fail with too (ErrTooLarge)
		}
	}
	w.cur.recs, w.cur.complete = w.recs, true
	return true, nil
}

// patch is a scan of a tree in which the watcher named a few changed
// directories (and lost nothing, and watches every directory): it
// starts from the last walk's directories and lists again only those
// named, parents first; a subdirectory that appeared is walked, one that
// went is forgotten with everything beneath it, and one still there is
// stat'ed to tell it was not replaced. The protected paths are then
// taken from every directory remembered, without a system call but the
// stat of each. done false: the tree must be walked (a directory named
// lies in a protected tree, one could not be read, or the repositories'
// hooks directories changed).
func (w *walker) patch(top string) (done bool, err error) {
	old := w.old
	if old.watch == nil || w.noTrust || w.changed == nil || !old.complete || old.unwatched != 0 {
		return false, nil
	}
	rels := make([]string, 0, len(w.changed))
	for rel := range w.changed {
		if _, ok := old.dirs[rel]; ok {
			rels = append(rels, rel)
		}
	}
	slices.SortFunc(rels, func(a, b string) int { return depthOf(a) - depthOf(b) })
	w.cur.dirs, w.cur.held = maps.Clone(old.dirs), old.held
	w.relisted = map[string]bool{}
	// undo closes what this attempt opened, before a full walk.
	undo := func() (bool, error) {
		for rel, ds := range w.cur.dirs {
			if ds.fd >= 0 && old.dirs[rel] != ds {
				unix.Close(ds.fd)
				ds.fd = -1
			}
		}
		w.cur = &treeCache{dirs: make(map[string]*dirState, len(old.dirs)), files: map[string]Found{}, watch: old.watch}
		w.recs, w.repos, w.bytes, w.dropped, w.relisted = nil, nil, 0, nil, nil
		w.snap.Paths = map[string]Found{}
		return false, nil
	}
	for _, rel := range rels {
		ds := w.cur.dirs[rel]
		if ds == nil || w.relisted[rel] {
			continue // forgotten with its parent, or listed already
		}
		if ds.tree != "" {
			return undo()
		}
		var st unix.Stat_t
		if rel == "" {
			err = unix.Fstat(w.dirfd, &st)
		} else {
			err = unix.Fstatat(w.dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return undo() // its parent, named too, would have said
		}
		nds, err := w.list(rel, nil, uint64(st.Dev), st.Ino, st.Ctim.Nano())
		if err != nil || nds == nil {
			return undo()
		}
		w.replace(rel, nds)
		was := map[string]bool{}
		for _, sub := range ds.subdirs {
			was[sub] = true
		}
		for _, sub := range ds.subdirs {
			if !slices.Contains(nds.subdirs, sub) {
				w.forget(sub)
			}
		}
		for i, sub := range nds.subdirs {
			if was[sub] {
				// Still there: the same directory, or one put in its
				// place (then walked as new).
				cds := w.cur.dirs[sub]
				var cst unix.Stat_t
				if cds != nil && unix.Fstatat(w.dirfd, sub, &cst, unix.AT_SYMLINK_NOFOLLOW) == nil &&
					uint64(cst.Dev) == cds.dev && cst.Ino == cds.ino {
					continue
				}
				w.forget(sub)
			}
			if err := w.dir(sub, depthOf(sub), nds.subTree[i], false); err != nil {
				undo()
				return false, err
			}
		}
	}
	// The protected paths and repositories of every directory remembered
	// (those walked above recorded theirs already: started afresh).
	w.recs, w.repos, w.bytes = nil, nil, 0
	w.snap.Paths, w.cur.files = map[string]Found{}, map[string]Found{}
	for rel, ds := range w.cur.dirs {
		if ds.repo && ds.tree == "" {
			w.repos = append(w.repos, join(rel, ".git"))
		}
		for i, r := range ds.hits {
			if err := w.record(r, ds.hitEntry[i]); err != nil {
				undo()
				return false, err
			}
		}
	}
	slices.Sort(w.repos)
	hooks := hooksDirs(w.dirfd, top, w.repos)
	if !slices.Equal(hooks, old.hooks) {
		return undo()
	}
	for _, rel := range hooks {
		if err := w.record(rel, hooksEntry(rel)); err != nil {
			undo()
			return false, err
		}
	}
	for _, ds := range w.dropped {
		if ds.fd >= 0 {
			unix.Close(ds.fd)
			ds.fd = -1
			w.cur.held--
		}
	}
	w.cur.repos, w.cur.hooks, w.cur.recs, w.cur.complete = w.repos, hooks, w.recs, true
	return true, nil
}

// replace puts ds in the place of the directory rel remembered, which is
// dropped (its descriptor closed once the patch holds).
func (w *walker) replace(rel string, ds *dirState) {
	if prev := w.cur.dirs[rel]; prev != nil && prev != ds {
		w.dropped = append(w.dropped, prev)
	}
	w.cur.dirs[rel] = ds
	if ds.fd >= 0 {
		w.cur.held++
	}
	if !ds.watched {
		w.cur.unwatched++
	}
	w.relisted[rel] = true
}

// forget drops the directory rel and everything beneath it that is
// remembered.
func (w *walker) forget(rel string) {
	ds := w.cur.dirs[rel]
	if ds == nil {
		return
	}
	delete(w.cur.dirs, rel)
	w.dropped = append(w.dropped, ds)
	for _, sub := range ds.subdirs {
		w.forget(sub)
	}
}

func depthOf(rel string) int {
	if rel == "" {
		return 0
	}
	return strings.Count(rel, "/") + 1
}

// hooksDirs returns the directories in the tree (rel to top) that the
// core.hooksPath of the repositories (their .git directories) names.
func hooksDirs(dirfd int, top string, repos []string) []string {
	var out []string
	for _, repo := range repos {
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
		out = append(out, rel)
	}
	return out
}

func hooksEntry(rel string) Entry {
	return Entry{Pattern: rel, Kind: Tree, Trigger: "the hooks directory a repository's core.hooksPath names: git runs its hooks on commit, checkout and push"}
}

// Close forgets every tree the Set remembers, closing the directory
// descriptors and the watcher it held for each. The Set stays usable: its
// next scan of a tree walks it again.
func (s *Set) Close() {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.trees {
		t.release(nil)
		t.watch.close()
	}
	clear(s.trees)
}

// hotWindow: a directory whose change time lies this close to a scan is
// listed again by the next scan, whatever its change time then.
const hotWindow = int64(100 * time.Millisecond)

// maxTrees bounds the trees a Set remembers.
const maxTrees = 16

// treeCache is what a Set remembers of one tree between scans.
type treeCache struct {
	dirs  map[string]*dirState // by rel ("" for the top)
	files map[string]Found     // protected entries with their copies, by rel
	held  int                  // directory descriptors kept
	// watch queues the changes since the last scan (watch_linux.go);
	// nil where inotify could not be had. One per tree, handed on from
	// scan to scan.
	watch *watcher
	// unwatched counts the directories of dirs without a watch.
	unwatched int
	// visited counts the directories the scan that made this visited
	// (walked, from memory or not): what a patch saves.
	visited int
	// What the last complete walk found, for a scan with nothing
	// changed since (fromLastWalk): the repositories' .git directories,
	// the hooks directories their configs named, and every protected
	// path stat'ed, in order.
	complete bool
	repos    []string
	hooks    []string
	recs     []recorded
}

// recorded is one protected path a walk stat'ed, with its entry.
type recorded struct {
	rel string
	e   Entry
}

// maxHeld bounds the directory descriptors a tree's memory keeps: at
// most 4096, and an eighth of the process's open-file limit, so that the
// server never runs short of descriptors for its own work. Past it,
// directories are looked at by path (about three times slower).
var maxHeld = func() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return int(min(4096, rl.Cur/8))
}()

// release closes the descriptors of t's directories that next does not
// keep (nil: all of them).
func (t *treeCache) release(next *treeCache) {
	for rel, ds := range t.dirs {
		if ds.fd < 0 {
			continue
		}
		if next != nil && next.dirs[rel] == ds {
			continue
		}
		unix.Close(ds.fd)
		ds.fd = -1
	}
}

// dirState is one directory as last listed.
type dirState struct {
	// fd is the directory, held open so that looking at it again costs
	// one fstat (-1: not held; looked at by path). It is used only while
	// its parent is unchanged, so it still is the directory at its path.
	fd       int
	dev, ino uint64
	ctime    int64
	subdirs  []string // children to descend into, by rel
	subTree  []*Entry // the Tree entry each lies in (nil: none)
	hits     []string // protected children, by rel
	hitEntry []Entry
	repo     bool // holds a .git directory
	// watched: the tree's watcher watched this directory before it was
	// read, so any change to its entries since is queued.
	watched bool
	// tree is the pattern of the protected tree it was listed in ("":
	// none): a directory that core.hooksPath names from one scan to the
	// next was taken from a listing that protected none of its files.
	tree string
}

func treeName(e *Entry) string {
	if e == nil {
		return ""
	}
	return e.Pattern
}

type walker struct {
	set      *Set
	snap     *Snapshot
	backup   bool
	dirfd    int
	old, cur *treeCache
	now      int64
	bytes    int
	listed   int
	repos    []string // rel of each .git directory found
	recs     []recorded
	// dropped are directories a patch no longer remembers; relisted, the
	// ones it listed again.
	dropped  []*dirState
	relisted map[string]bool
	// changed holds the directories the watcher saw change since the
	// last scan; noTrust (the watcher lost events) has every directory
	// stat'ed.
	changed map[string]bool
	noTrust bool
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// dir visits the directory rel: its protected entries are recorded and
// its subdirectories visited, from the cache when it is unchanged.
//
// trusted says that rel's parent is unchanged since the last scan, so the
// descriptor kept of rel is still the directory at rel.
func (w *walker) dir(rel string, depth int, inTree *Entry, trusted bool) error {
	if depth > maxDepth {
		return ErrTooLarge
	}
	var st unix.Stat_t
	ds := w.old.dirs[rel]
	if ds != nil && ds.tree != treeName(inTree) {
		// Listed under another protected tree (or none): which children
		// are protected differs, so it is listed again.
		ds = nil
	}
	if trusted && ds != nil && ds.watched && !w.noTrust && !w.changed[rel] {
		// Watched, and no change queued for it: as it was listed, with
		// no system call.
		return w.visit(rel, depth, ds, inTree, true)
	}
	var err error
	switch {
	case rel == "":
		err = unix.Fstat(w.dirfd, &st)
	case trusted && ds != nil && ds.fd >= 0:
		err = unix.Fstat(ds.fd, &st)
	default:
		err = unix.Fstatat(w.dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	ctime := st.Ctim.Nano()
	unchanged := ds != nil && ds.dev == uint64(st.Dev) && ds.ino == st.Ino && ds.ctime == ctime && w.now-ctime >= hotWindow
	if !unchanged {
		if ds, err = w.list(rel, inTree, uint64(st.Dev), st.Ino, ctime); err != nil {
			return err
		}
		if ds == nil {
			return nil
		}
	}
	return w.visit(rel, depth, ds, inTree, unchanged)
}

// visit records the directory rel as ds and visits its protected
// entries and subdirectories; unchanged says ds is still what rel holds.
func (w *walker) visit(rel string, depth int, ds *dirState, inTree *Entry, unchanged bool) error {
	w.cur.visited++
	if prev := w.cur.dirs[rel]; prev != ds {
		if prev != nil && prev.fd >= 0 {
			// Visited twice (a hooks directory, plain and as a tree), or
			// in a patch's copy: the descriptor of the one replaced.
			switch {
			case w.old.dirs[rel] != prev: // listed by this scan
				unix.Close(prev.fd)
				prev.fd = -1
				w.cur.held--
			case w.relisted != nil: // a patch: no release pass after
				w.dropped = append(w.dropped, prev)
			}
		}
		if ds.fd >= 0 {
			w.cur.held++
		}
		if !ds.watched {
			w.cur.unwatched++
		}
	}
	w.cur.dirs[rel] = ds
	if ds.repo && inTree == nil {
		w.repos = append(w.repos, join(rel, ".git"))
	}
	for i, r := range ds.hits {
		if err := w.record(r, ds.hitEntry[i]); err != nil {
			return err
		}
	}
	for i, r := range ds.subdirs {
		if err := w.dir(r, depth+1, ds.subTree[i], unchanged); err != nil {
			return err
		}
	}
	return nil
}

// list reads the directory rel (opened beneath the tree, no link
// followed) and decides its protected children and the subdirectories to
// visit.
func (w *walker) list(rel string, inTree *Entry, dev, ino uint64, ctime int64) (*dirState, error) {
	var parts []string
	if rel != "" {
		parts = strings.Split(rel, "/")
	}
	name := rel
	if name == "" {
		name = "."
	}
	fd, err := openDirBeneath(w.dirfd, name)
	if err != nil {
		return nil, nil // gone, or not enterable
	}
	// Watched before it is read: a change after the read is queued.
	watched := w.cur.watch.watch(fd, rel)
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil && len(ents) == 0 {
		return nil, nil // unreadable: what is there is unreadable to a tool too
	}
	w.listed++
	if w.relisted != nil {
		w.relisted[rel] = true
	}
	ds := &dirState{fd: -1, dev: dev, ino: ino, ctime: ctime, watched: watched, tree: treeName(inTree)}
	if rel != "" && w.cur.held < maxHeld {
		// Keep the directory for the next scan, if it is the one stat saw.
		if kept, err := unix.Openat(fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			var kst unix.Stat_t
			if unix.Fstat(kept, &kst) == nil && uint64(kst.Dev) == dev && kst.Ino == ino {
				ds.fd = kept
			} else {
				unix.Close(kept)
			}
		}
	}
	for _, de := range ents {
		n := de.Name()
		cp := append(append([]string(nil), parts...), n)
		e, hit := Entry{}, false
		if inTree != nil {
			e, hit = *inTree, true
		} else {
			e, hit = w.set.Match(join(rel, n))
		}
		isDir := de.Type()&os.ModeDir != 0
		if hit {
			ds.hits = append(ds.hits, join(rel, n))
			ds.hitEntry = append(ds.hitEntry, e)
		}
		if n == ".git" && isDir {
			ds.repo = true
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
		case !w.set.mayHoldProtected(cp) || n == NotScanned:
			continue
		}
		ds.subdirs = append(ds.subdirs, join(rel, n))
		ds.subTree = append(ds.subTree, sub)
	}
	return ds, nil
}

// record stats rel and keeps it, with its copy when the walker keeps
// copies (taken again only when the entry changed since the last scan).
func (w *walker) record(rel string, e Entry) error {
	w.recs = append(w.recs, recorded{rel, e})
	var st unix.Stat_t
	if err := unix.Fstatat(w.dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil
	}
	f := Found{Rel: rel, Entry: e, Stat: statOf(&st)}
	if !w.backup {
		// Keep the copy for the next scan that needs one.
		if prev, ok := w.old.files[rel]; ok && prev.Stat == f.Stat {
			w.cur.files[rel] = prev
		}
	}
	if w.backup {
		if prev, ok := w.old.files[rel]; ok && prev.backed && prev.Stat == f.Stat && w.now-f.Stat.Ctim >= hotWindow {
			f.Data, f.backed = prev.Data, true
		} else {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				if w.bytes+int(st.Size) > BackupMax {
					return ErrTooLarge
				}
				if data, err := readBeneath(w.dirfd, rel, st.Size); err == nil {
					f.Data, f.backed = data, true
				}
			case unix.S_IFLNK:
				parent, base := path.Split(rel)
				pfd, err := openDirBeneath(w.dirfd, dotIfEmpty(strings.TrimSuffix(parent, "/")))
				if err == nil {
					buf := make([]byte, unix.PathMax)
					if n, err := unix.Readlinkat(pfd, base, buf); err == nil {
						f.Data, f.backed = buf[:n], true
					}
					unix.Close(pfd)
				}
			case unix.S_IFDIR:
				f.backed = true
			}
		}
		w.bytes += len(f.Data)
		if f.backed {
			w.cur.files[rel] = f
		}
	}
	w.snap.Paths[rel] = f
	return nil
}

func dotIfEmpty(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// readBeneath reads the regular file rel beneath dirfd, no link followed.
func readBeneath(dirfd int, rel string, size int64) ([]byte, error) {
	how := unix.OpenHow{Flags: uint64(unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dirfd, rel, &how)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var b bytes.Buffer
	b.Grow(int(size))
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// add records rel (and, for a Tree, all beneath it) under entry e.
func (w *walker) add(rel string, e Entry) error {
	if err := w.record(rel, e); err != nil {
		return err
	}
	return w.dir(rel, strings.Count(rel, "/")+1, &e, false)
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
