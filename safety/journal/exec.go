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
	c := &checker{j: j, reverting: reverting, missing: map[string]bool{}, parents: map[string]error{},
		dsts: map[string]bool{}, dirs: map[string]*jail.Dir{}}
	defer c.close()
	for _, m := range moves {
		c.one(m)
	}
	var mk []string
	for d := range c.missing {
		mk = append(mk, d)
	}
	sort.Strings(mk) // outermost first
	return c.fails, mk
}

// checker holds one check's state: the failures so far, the destination
// folders to create, and anchored parent directories opened once each.
type checker struct {
	j         *Journal
	reverting bool
	fails     []Failure
	missing   map[string]bool      // destination folders to create
	parents   map[string]error     // destination folder → its verdict
	dsts      map[string]bool      // destinations claimed so far
	dirs      map[string]*jail.Dir // open parent directories
}

func (c *checker) close() {
	for _, d := range c.dirs {
		d.Close()
	}
}

// fail records m's refusal: err's code, and reason or else err's own.
func (c *checker) fail(m Move, err error, reason string) {
	code, r := result.Classify(err)
	if reason != "" {
		r = reason
	}
	c.fails = append(c.fails, Failure{Src: m.Src, Dst: m.Dst, Code: code, Reason: r})
}

// lstat looks rel up through its cached, anchored parent directory fd.
func (c *checker) lstat(rel string) (jail.Info, error) {
	parent, base := jail.Split(rel)
	d, ok := c.dirs[parent]
	if !ok {
		var err error
		if d, err = c.j.root.OpenDir(parent); err != nil {
			return jail.Info{}, err
		}
		c.dirs[parent] = d
	}
	return d.Lstat(base)
}

// one checks one move: the source is still the object it was, the
// destination is free, unclaimed, and its folder is a real folder or missing.
func (c *checker) one(m Move) {
	if !c.sourceHolds(m) {
		return
	}
	if m.State.Dir && strings.HasPrefix(m.Dst+"/", m.Src+"/") {
		c.fail(m, jail.ErrOccupied, "a folder cannot be moved into itself")
		return
	}
	if c.dsts[m.Dst] {
		c.fail(m, jail.ErrOccupied, "two moves target "+m.Dst)
		return
	}
	c.dsts[m.Dst] = true
	if _, err := c.lstat(m.Dst); err == nil {
		why := m.Dst + " is now occupied; nothing is ever overwritten"
		if c.reverting {
			why = "the original location " + m.Dst + " is now occupied; nothing is ever overwritten"
		}
		c.fail(m, jail.ErrOccupied, why)
		return
	} else if result.CodeOf(err) != result.NotFound {
		c.fail(m, err, "")
		return
	}
	parent, _ := jail.Split(m.Dst)
	perr, seen := c.parents[parent]
	if !seen {
		perr = c.j.checkParent(parent, c.missing)
		c.parents[parent] = perr
	}
	if perr != nil {
		c.fail(m, perr, "")
	}
}

// sourceHolds reports whether m's source is still there, not a symlink, and
// unchanged since it was checked; if not, it records why.
func (c *checker) sourceHolds(m Move) bool {
	info, err := c.lstat(m.Src)
	switch {
	case err != nil && result.CodeOf(err) == result.NotFound:
		c.fail(m, jail.ErrStaleGone, "it is no longer at "+m.Src+" (moved, renamed or deleted since)")
	case err != nil:
		c.fail(m, err, "")
	case info.IsSymlink():
		c.fail(m, jail.ErrSymlink, m.Src+" is now a symbolic link, which is never moved")
	case !m.State.Matches(info):
		c.fail(m, jail.ErrChanged, m.Src+" changed since it was checked (different file, size or modification time)")
	default:
		return true
	}
	return false
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
	if err := j.settle(); err != nil {
		return Outcome{}, err
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
	j.next++
	if err := j.announce(b, hook); err != nil {
		return Outcome{}, err
	}
	j.pending[b.ID] = b
	m := j.root.NewMover()
	done, failed, ioErr := j.perform(m, b)
	if ioErr != nil {
		m.Close()
		// The action stays pending: the next start resolves it by identity.
		return Outcome{Failed: failed}, result.New(result.OperationFailed,
			"the journal could not be synced during the action; restart organizerd to resolve it from the filesystem")
	}
	c := commitOf(b.ID, done, len(b.Moves))
	delete(j.pending, b.ID)
	j.commitState(b, c.All, c.Keep)
	j.deferSettle(b, m, c)
	kept, _ := split(b.Moves, c.All, c.Keep)
	out := Outcome{Action: &Action{ID: b.ID, Tool: b.Tool, Label: b.Label, Time: b.Time, Moves: kept, Mkdirs: mkdirs}, Failed: failed}
	j.maybeCompact()
	if len(kept) == 0 {
		return out, result.New(result.OperationFailed, "no file could be moved; see the per-file reasons")
	}
	return out, nil
}

// perform creates b's folders and moves b's files with m, recording the
// completed moves in fsync'd batches (BatchMoves, BatchInterval) while it
// goes. It returns the indexes of the completed moves, the failed ones, and
// the first journal or sync error, after which it stops. The last batch's
// directories are left for settle, whose commit record covers its moves.
func (j *Journal) perform(m *jail.Mover, b *record) (done []int, failed []Failure, ioErr error) {
	for _, d := range b.Mkdirs {
		if _, err := j.root.MkdirAll(d); err != nil {
			break // each move below reports its own failure
		}
	}
	var batch []int
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
	for i, mv := range b.Moves {
		if err := m.Move(mv.Src, mv.Dst, mv.State); err != nil {
			code, reason := result.Classify(err)
			failed = append(failed, Failure{Src: mv.Src, Dst: mv.Dst, Code: code, Reason: reason})
			continue
		}
		done = append(done, i)
		batch = append(batch, i)
		if len(batch) >= j.o.BatchMoves || time.Since(last) >= j.o.BatchInterval {
			if ioErr = flush(); ioErr != nil {
				return done, failed, ioErr
			}
		}
	}
	return done, failed, nil
}

// commitOf is the commit record of action id: all of its n moves, or keep
// with the indexes of the ones done (empty when none was).
func commitOf(id uint64, done []int, n int) *record {
	c := &record{T: "commit", ID: id, All: len(done) == n}
	if !c.All {
		c.Keep = done
		if c.Keep == nil {
			c.Keep = []int{}
		}
	}
	return c
}

// maybeCompact rewrites a journal grown past 16 MiB.
func (j *Journal) maybeCompact() {
	if j.size < 16<<20 || j.settle() != nil {
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
	c := commitOf(p.ID, done, len(p.Moves))
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
