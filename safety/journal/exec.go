package journal

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Hook is called after every check passed and before the action's begin
// record is written; if it fails, nothing moves and its error is returned.
// It is the audit log's fail-closed intent.
type Hook func(a *Action) error

// Do checks and performs moves as one new action (an applied plan or one
// move) and clears the redo stack. Before anything moves, every source must
// still match its State and every destination must be free, with no symlink
// or non-directory on the way; otherwise the action is refused with
// ErrRefused (or the single failure's own error) and Outcome.Failed names
// each file. Destination directories are created anchored.
func (j *Journal) Do(tool, label string, moves []Move, hook Hook) (Outcome, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.run(&record{T: "begin", Op: opDo, Tool: tool, Label: label, Moves: moves}, hook, false)
}

// Undo reverts the latest action as one action. It refuses, moving nothing,
// when any moved file is gone or changed or any original location is now
// occupied, and names each such file. Directories the action created are
// removed when they are empty again.
func (j *Journal) Undo(hook Hook) (Outcome, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.undo) == 0 {
		return Outcome{}, ErrNothingToUndo
	}
	a := j.undo[len(j.undo)-1]
	out, err := j.run(&record{T: "begin", Op: opUndo, Of: a.ID, Tool: a.Tool, Label: a.Label, Moves: reverse(a.Moves)}, hook, true)
	if err == nil && out.Action != nil {
		for i := len(a.Mkdirs) - 1; i >= 0; i-- {
			_ = j.root.RemoveEmptyDir(a.Mkdirs[i])
		}
	}
	return out, err
}

// Redo re-applies the latest undone action, with the same checks as Undo.
func (j *Journal) Redo(hook Hook) (Outcome, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.redo) == 0 {
		return Outcome{}, ErrNothingToRedo
	}
	a := j.redo[len(j.redo)-1]
	return j.run(&record{T: "begin", Op: opRedo, Of: a.ID, Tool: a.Tool, Label: a.Label, Moves: a.Moves}, hook, true)
}

// Check reports, without acting, what would refuse these moves.
func (j *Journal) Check(moves []Move) []Failure {
	f, _ := j.check(moves, false)
	return f
}

// check verifies every move and returns the directories that must be created.
func (j *Journal) check(moves []Move, reverting bool) ([]Failure, []string) {
	var fails []Failure
	fail := func(m Move, err error, reason string) {
		code, r := result.Classify(err)
		if reason != "" {
			r = reason
		}
		fails = append(fails, Failure{Src: m.Src, Dst: m.Dst, Code: code, Reason: r})
	}
	missing := map[string]bool{}
	parents := map[string]error{}
	dsts := map[string]bool{}
	dirs := map[string]*jail.Dir{}
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	// lstat through cached, anchored parent directory fds.
	lstat := func(rel string) (jail.Info, error) {
		parent, base := jail.Split(rel)
		d, ok := dirs[parent]
		if !ok {
			var err error
			if d, err = j.root.OpenDir(parent); err != nil {
				return jail.Info{}, err
			}
			dirs[parent] = d
		}
		return d.Lstat(base)
	}
	for _, m := range moves {
		info, err := lstat(m.Src)
		switch {
		case err != nil && result.CodeOf(err) == result.NotFound:
			fail(m, jail.ErrStaleGone, "it is no longer at "+m.Src+" (moved, renamed or deleted since)")
			continue
		case err != nil:
			fail(m, err, "")
			continue
		case info.IsSymlink():
			fail(m, jail.ErrSymlink, m.Src+" is now a symbolic link, which is never moved")
			continue
		case !m.State.Matches(info):
			fail(m, jail.ErrChanged, m.Src+" changed since it was checked (different file, size or modification time)")
			continue
		}
		if m.State.Dir && strings.HasPrefix(m.Dst+"/", m.Src+"/") {
			fail(m, jail.ErrOccupied, "a folder cannot be moved into itself")
			continue
		}
		if dsts[m.Dst] {
			fail(m, jail.ErrOccupied, "two moves target "+m.Dst)
			continue
		}
		dsts[m.Dst] = true
		if _, err := lstat(m.Dst); err == nil {
			why := m.Dst + " is now occupied; nothing is ever overwritten"
			if reverting {
				why = "the original location " + m.Dst + " is now occupied; nothing is ever overwritten"
			}
			fail(m, jail.ErrOccupied, why)
			continue
		} else if result.CodeOf(err) != result.NotFound {
			fail(m, err, "")
			continue
		}
		parent, _ := jail.Split(m.Dst)
		perr, seen := parents[parent]
		if !seen {
			perr = j.checkParent(parent, missing)
			parents[parent] = perr
		}
		if perr != nil {
			fail(m, perr, "")
		}
	}
	var mk []string
	for d := range missing {
		mk = append(mk, d)
	}
	sort.Strings(mk) // outermost first
	return fails, mk
}

// checkParent walks rel's components: each existing one must be a real
// directory; missing ones are collected.
func (j *Journal) checkParent(rel string, missing map[string]bool) error {
	if rel == "." {
		return nil
	}
	cur := "."
	gone := false
	for _, name := range splitPath(rel) {
		cur = jail.Join(cur, name)
		if gone {
			missing[cur] = true
			continue
		}
		info, err := j.root.Lstat(cur)
		switch {
		case err != nil && result.CodeOf(err) == result.NotFound:
			gone = true
			missing[cur] = true
		case err != nil:
			return err
		case info.IsSymlink():
			return result.New(result.PathEscape, "the destination folder "+cur+" is a symbolic link, which is never followed")
		case !info.IsDir():
			return result.New(result.PolicyDenied, "the destination folder "+cur+" is a file, not a folder")
		}
	}
	return nil
}

func splitPath(rel string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(rel); i++ {
		if i == len(rel) || rel[i] == '/' {
			if i > start {
				out = append(out, rel[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// run checks, announces, journals and performs one action. Called with j.mu held.
func (j *Journal) run(b *record, hook Hook, reverting bool) (Outcome, error) {
	if len(b.Moves) == 0 {
		return Outcome{}, result.New(result.InvalidRequest, "there is nothing to move")
	}
	fails, mkdirs := j.check(b.Moves, reverting)
	if len(fails) > 0 {
		if len(fails) == 1 {
			return Outcome{Failed: fails}, result.New(fails[0].Code, fails[0].Reason)
		}
		return Outcome{Failed: fails}, ErrRefused
	}
	b.ID = j.next
	b.Time = time.Now().UTC()
	b.Mkdirs = mkdirs
	if hook != nil {
		if err := hook(&Action{ID: b.ID, Tool: b.Tool, Label: b.Label, Time: b.Time, Moves: b.Moves, Mkdirs: mkdirs}); err != nil {
			return Outcome{}, err
		}
	}
	j.next++
	if err := j.write(true, b); err != nil {
		return Outcome{}, err
	}
	j.pending[b.ID] = b
	m := j.root.NewMover()
	defer m.Close()
	for _, d := range mkdirs {
		if _, err := j.root.MkdirAll(d); err != nil {
			break // each move below reports its own failure
		}
	}
	var failed []Failure
	var done, batch []int
	last := time.Now()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := m.Sync(); err != nil {
			return err
		}
		err := j.write(true, &record{T: "done", ID: b.ID, I: batch})
		batch = nil
		last = time.Now()
		return err
	}
	var ioErr error
	for i, mv := range b.Moves {
		if err := m.Move(mv.Src, mv.Dst, mv.State); err != nil {
			code, reason := result.Classify(err)
			failed = append(failed, Failure{Src: mv.Src, Dst: mv.Dst, Code: code, Reason: reason})
			continue
		}
		done = append(done, i)
		batch = append(batch, i)
		if len(batch) >= j.o.BatchMoves || time.Since(last) >= j.o.BatchInterval {
			if err := flush(); err != nil {
				ioErr = err
				break
			}
		}
	}
	if ioErr == nil {
		ioErr = flush()
	}
	if ioErr == nil {
		ioErr = m.Sync()
	}
	c := &record{T: "commit", ID: b.ID, All: len(done) == len(b.Moves)}
	if !c.All {
		c.Keep = done
		if c.Keep == nil {
			c.Keep = []int{}
		}
	}
	if ioErr == nil {
		ioErr = j.write(true, c)
	}
	if ioErr != nil {
		// The action stays pending: the next start resolves it by identity.
		return Outcome{Failed: failed}, result.New(result.OperationFailed,
			"the journal could not be synced during the action; restart organizerd to resolve it from the filesystem")
	}
	delete(j.pending, b.ID)
	j.commitState(b, c.All, c.Keep)
	kept, _ := split(b.Moves, c.All, c.Keep)
	out := Outcome{Action: &Action{ID: b.ID, Tool: b.Tool, Label: b.Label, Time: b.Time, Moves: kept, Mkdirs: mkdirs}, Failed: failed}
	j.maybeCompact()
	if len(kept) == 0 {
		return out, result.New(result.OperationFailed, "no file could be moved; see the per-file reasons")
	}
	return out, nil
}

// maybeCompact rewrites a journal grown past 16 MiB.
func (j *Journal) maybeCompact() {
	if j.size < 16<<20 {
		return
	}
	if err := j.w.Flush(); err == nil {
		if err := j.compact(nil); err != nil {
			j.log.Warn("journal: compaction failed", "err", err)
		}
	}
}

// recover resolves an interrupted action by identity (see the package doc).
func (j *Journal) recover(p *record) (Recovered, error) {
	r := Recovered{ID: p.ID, Op: p.Op, Tool: p.Tool}
	m := j.root.NewMover()
	defer m.Close()
	var done []int
	for i, mv := range p.Moves {
		dst, derr := j.root.Lstat(mv.Dst)
		src, serr := j.root.Lstat(mv.Src)
		atDst := derr == nil && sameObject(mv.State, dst)
		atSrc := serr == nil && sameObject(mv.State, src)
		switch {
		case atDst && atSrc:
			// Two names of one file: the link of a link+unlink move landed.
			if err := j.root.RemoveLinkedName(mv.Src, mv.Dst, mv.State.ID); err != nil {
				r.Dropped++
				continue
			}
		case atDst:
		case atSrc:
			parent, _ := jail.Split(mv.Dst)
			_, _ = j.root.MkdirAll(parent)
			if err := m.Move(mv.Src, mv.Dst, jail.StateOf(src)); err != nil {
				r.Dropped++
				continue
			}
		default:
			r.Dropped++
			continue
		}
		done = append(done, i)
	}
	if err := m.Sync(); err != nil && !errors.Is(err, jail.ErrNotFound) {
		j.log.Warn("journal: directory sync failed during recovery", "err", err)
	}
	r.Completed = len(done)
	c := &record{T: "commit", ID: p.ID, All: len(done) == len(p.Moves)}
	if !c.All {
		c.Keep = done
		if c.Keep == nil {
			c.Keep = []int{}
		}
	}
	if err := j.write(true, c); err != nil {
		return r, err
	}
	delete(j.pending, p.ID)
	// A recovered move may have drifted in size or mtime before the crash;
	// the stacks keep the state as it is now, so a later undo checks the
	// file as it really is.
	for _, i := range done {
		if info, err := j.root.Lstat(p.Moves[i].Dst); err == nil {
			p.Moves[i].State = jail.StateOf(info)
		}
	}
	j.commitState(p, c.All, c.Keep)
	if p.Op == opUndo && len(done) > 0 {
		for _, a := range j.redo {
			if a.ID == p.Of {
				for k := len(a.Mkdirs) - 1; k >= 0; k-- {
					_ = j.root.RemoveEmptyDir(a.Mkdirs[k])
				}
			}
		}
	}
	return r, nil
}

func sameObject(s jail.FileState, i jail.Info) bool {
	if i.IsSymlink() {
		return false
	}
	return i.ID == s.ID && i.IsDir() == s.Dir
}
