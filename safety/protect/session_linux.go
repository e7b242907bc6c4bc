package protect

import (
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// session is the protected state that the commands running at once in
// one tree are held to: the snapshot taken when the first of them began,
// kept until the last one finished.
type session struct {
	snap   *Snapshot
	active int
	// mu serialises the finishes: two undoing the same change at once
	// would race for it.
	mu sync.Mutex
}

// Run is one command's hold on its tree's session (Set.Begin).
type Run struct {
	set   *Set
	key   string
	sess  *session
	dirfd int
	top   string
	view  *Snapshot
}

// Begin starts the check of one command in the tree open at dirfd (whose
// absolute path is top). When no other command of this Set runs in the
// tree, it takes the snapshot, with copies, that the command is held to;
// otherwise the command joins the snapshot the running ones are held to,
// so that what one of them planted is never taken for an original by
// another (nor written back after it was undone). Finish ends the hold.
func (s *Set) Begin(dirfd int, top string) (*Run, error) {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", top, st.Dev, st.Ino)
	s.smu.Lock()
	defer s.smu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		snap, err := s.Scan(dirfd, top, true)
		if err != nil {
			return nil, err
		}
		sess = &session{snap: snap}
		if s.sessions == nil {
			s.sessions = map[string]*session{}
		}
		s.sessions[key] = sess
	}
	sess.active++
	sess.mu.Lock()
	view := &Snapshot{Paths: make(map[string]Found, len(sess.snap.Paths)), Dirs: sess.snap.Dirs}
	for k, v := range sess.snap.Paths {
		view.Paths[k] = v
	}
	sess.mu.Unlock()
	return &Run{set: s, key: key, sess: sess, dirfd: dirfd, top: top, view: view}, nil
}

// Baseline is the snapshot the command is held to, as it stood when the
// command began (the caller's own copy: for the read-only mounts).
func (r *Run) Baseline() *Snapshot { return r.view }

// Finish scans the tree, undoes every change from the snapshot the
// command is held to (whichever running command made it: each finish
// leaves the protected paths as that snapshot shows them), and ends the
// hold. What it wrote back becomes the snapshot's original for the
// commands still running.
func (r *Run) Finish(qroot string) ([]Change, error) {
	defer func() {
		r.set.smu.Lock()
		if r.sess.active--; r.sess.active == 0 {
			delete(r.set.sessions, r.key)
		}
		r.set.smu.Unlock()
	}()
	r.sess.mu.Lock()
	defer r.sess.mu.Unlock()
	after, err := r.set.Scan(r.dirfd, r.top, false)
	if err != nil {
		return nil, err
	}
	changes := Diff(r.sess.snap, after)
	if len(changes) == 0 {
		return nil, nil
	}
	changes, err = Undo(r.dirfd, r.top, changes, r.sess.snap, qroot)
	for _, c := range changes {
		if !strings.Contains(c.Outcome, "original restored") {
			continue
		}
		for rel, f := range r.sess.snap.Paths {
			if rel != c.Path && !strings.HasPrefix(rel, c.Path+"/") {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(r.dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				f.Stat = statOf(&st)
				r.sess.snap.Paths[rel] = f
			}
		}
	}
	return changes, err
}
