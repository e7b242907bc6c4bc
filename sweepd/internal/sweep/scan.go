package sweep

import (
	"context"
	"io/fs"
	"sort"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// found is one artifact directory discovered by a walk.
type found struct {
	root         *jail.Root
	rel          string // root-relative path of the artifact
	project      string // root-relative path of the directory holding the marker
	target       *Target
	id           jail.Identity
	keep         bool
	size         int64
	lastActivity time.Time
	radar        *FindRadar       // set with size by measureAll; content re-checked for shown finds by recheckAll
	git          *risk.SummaryGit // what git says of the find's files, set with size; nil outside any repository
}

type walkOpts struct {
	maxDepth  int
	only      map[string]bool // kinds or ecosystems; empty = all
	olderThan time.Time       // zero = no age filter
	progress  func(dirs, finds int)
}

type walker struct {
	ctx   context.Context
	root  *jail.Root
	ix    *index
	opts  walkOpts
	finds []*found
	dirs  int
}

// walk discovers artifacts beneath start. It never follows a symlink, never
// enters another mount (jail refuses both), never descends into a find and
// never enters a VCS directory.
func (w *walker) walk(d *jail.Dir, rel string, depth int, keep bool, skip map[string]bool) time.Time {
	w.dirs++
	if w.opts.progress != nil && w.dirs%512 == 0 {
		w.opts.progress(w.dirs, len(w.finds))
	}
	if w.ctx.Err() != nil {
		return time.Time{}
	}
	ents, err := d.ReadDir()
	if err != nil {
		return time.Time{}
	}
	files, subdirs, newest := listing(d, ents, skip)
	if files[KeepFile] {
		keep = true
	}
	first := len(w.finds)
	pruned := w.findHere(d, rel, files, subdirs, keep)
	for _, name := range subdirs {
		if pruned[name] || depth >= w.opts.maxDepth || w.ctx.Err() != nil {
			continue
		}
		c, err := d.OpenDir(name)
		if err != nil {
			continue // a symlink swapped in, a mount, a vanished dir: never entered
		}
		n := w.walk(c, jail.Join(rel, name), depth+1, keep, childSkip(pruned, name))
		c.Close()
		if n.After(newest) {
			newest = n
		}
	}
	for _, f := range w.finds[first:] {
		if f.project == rel {
			f.lastActivity = newest
		}
	}
	return newest
}

// listing sorts one directory's entries into regular files and the
// subdirectories worth entering (not VCS, not in skip), and returns the
// newest modification time among the files.
func listing(d *jail.Dir, ents []jail.Entry, skip map[string]bool) (map[string]bool, []string, time.Time) {
	files := make(map[string]bool, len(ents))
	var newest time.Time
	var subdirs []string
	for _, e := range ents {
		typ := e.Type
		if typ == fs.ModeIrregular {
			info, err := d.Lstat(e.Name)
			if err != nil {
				continue
			}
			typ = info.Mode.Type()
		}
		switch {
		case typ == fs.ModeDir:
			// A find set aside by a reclaim (being deleted, or left by a
			// crash for the next start to finish) is never listed or entered.
			if !vcsDirs[e.Name] && !skip[e.Name] && !jail.IsAside(e.Name) {
				subdirs = append(subdirs, e.Name)
			}
		case typ == 0: // regular file
			files[e.Name] = true
			if info, err := d.Lstat(e.Name); err == nil && info.ModTime.After(newest) {
				newest = info.ModTime
			}
		}
	}
	return files, subdirs, newest
}

// findHere records the finds directly in d (at rel) and returns the
// artifact paths found, which the walk does not enter.
func (w *walker) findHere(d *jail.Dir, rel string, files map[string]bool, subdirs []string, keep bool) map[string]bool {
	pruned := map[string]bool{}
	for _, name := range subdirs {
		for _, t := range w.ix.byName[name] {
			if pruned[name] {
				break
			}
			for _, dir := range t.Dirs {
				if dir != name && !hasPrefixDir(dir, name) {
					continue
				}
				if !markerPresent(d, files, t) {
					continue
				}
				if f := w.probe(d, rel, dir, t, keep); f != nil {
					w.finds = append(w.finds, f)
					pruned[dir] = true
					if dir == name {
						pruned[name] = true
					}
				}
			}
		}
	}
	return pruned
}

// childSkip returns the names inside child that are already finds of the
// parent's level (project/target is found from the project directory), so
// the child's walk does not enter them.
func childSkip(pruned map[string]bool, child string) map[string]bool {
	var skip map[string]bool
	for p := range pruned {
		if hasPrefixDir(p, child) {
			if skip == nil {
				skip = map[string]bool{}
			}
			skip[p[len(child)+1:]] = true
		}
	}
	return skip
}

func hasPrefixDir(p, dir string) bool {
	return len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

func markerPresent(d *jail.Dir, files map[string]bool, t *Target) bool {
	if len(t.Markers) == 0 {
		return true // identified by Inside (pyvenv.cfg)
	}
	for name := range files {
		if jail.MatchAny(t.Markers, name) {
			return true
		}
	}
	return false
}

// probe checks a candidate artifact dir (relative to the project dir d) and
// returns a find, or nil.
func (w *walker) probe(d *jail.Dir, projectRel, dir string, t *Target, keep bool) *found {
	var info jail.Info
	var err error
	var inside *jail.Dir
	if hasSlash(dir) {
		inside, err = w.root.OpenDir(jail.Join(projectRel, dir))
	} else {
		inside, err = d.OpenDir(dir)
	}
	if err != nil {
		return nil // missing, symlink, mount: not a find
	}
	defer inside.Close()
	info = inside.Info()
	for _, name := range t.Inside {
		if i, err := inside.Lstat(name); err != nil || !i.IsRegular() {
			return nil
		}
	}
	if len(w.opts.only) > 0 && !w.opts.only[t.Kind] && !w.opts.only[t.Ecosystem] {
		return nil
	}
	rel := jail.Join(projectRel, dir)
	if !keep {
		if i, err := inside.Lstat(KeepFile); err == nil && !i.IsDir() {
			keep = true
		}
	}
	return &found{root: w.root, rel: rel, project: projectRel, target: t, id: info.ID, keep: keep}
}

func hasSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// sortFinds orders finds largest first, then by path.
func sortFinds(fs []*found) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].size != fs[j].size {
			return fs[i].size > fs[j].size
		}
		return fs[i].root.Path()+"/"+fs[i].rel < fs[j].root.Path()+"/"+fs[j].rel
	})
}
