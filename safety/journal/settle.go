package journal

import (
	"fmt"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// unsettled is the latest action whose moves are done but whose changed
// directories are not yet fsync'd and whose commit record is not yet
// written: the part of an action that no crash guarantee needs before the
// caller is answered (see the package doc, "What an answer promises").
type unsettled struct {
	id uint64
	m  *jail.Mover // holds the changed directories
	c  *record     // the commit record
}

// deferSettle hands the end of action b (its mover m and commit record c) to a
// settle that runs in the background right away, or earlier, first thing
// in the next action, in Close, or before a compaction, whichever takes
// the lock first. Called with j.mu held, after the action's begin record
// was fsync'd and its moves were made.
func (j *Journal) deferSettle(b *record, m *jail.Mover, c *record) {
	j.open = &unsettled{id: b.ID, m: m, c: c}
	go func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if err := j.settle(); err != nil {
			j.log.Error("journal: an action's end could not be made durable; actions are refused until restart", "id", b.ID, "err", err)
		}
	}()
}

// unwrite cuts the journal file back to size, the end of its last whole
// record, after the begin record of an action could not be written
// (cause; ENOSPC on a full disk). Nothing of the action happened and no
// intent was asked for, so the journal stays usable and the caller is
// refused with ErrWrite. A crash before the next fsync may still leave the
// cut record's bytes on disk: the next start sets that damaged tail aside.
// When the cut itself fails the journal refuses actions until restart.
func (j *Journal) unwrite(size int64, cause error) error {
	werr := ErrWrite.Wrap(cause)
	if err := j.f.Truncate(size); err != nil {
		j.broken = werr
		return werr
	}
	j.w.Reset(j.f)
	j.size = size
	return werr
}

// settle finishes the unsettled action, if any: fsync of every directory
// its moves changed, then its commit record, written and fsync'd, so that
// a durable commit never describes a rename that a power loss could undo.
// A failure leaves the action's begin record without its commit, which the
// next start resolves from the filesystem by identity; until then the
// journal refuses new actions (ErrWrite), since its file no longer says
// what the stacks hold. Called with j.mu held.
func (j *Journal) settle() error {
	if j.broken != nil {
		return j.broken
	}
	u := j.open
	if u == nil {
		return nil
	}
	j.open = nil
	defer u.m.Close()
	err := u.m.Sync()
	if err == nil {
		err = j.write(true, u.c)
	}
	if err != nil {
		j.broken = result.Wrap(result.OperationFailed, fmt.Sprintf(
			"the journal could not record the end of action %d, so nothing more is moved; restart organizerd to resolve it from the filesystem", u.id), err)
		return j.broken
	}
	return nil
}

// announce makes b's begin record durable and runs hook (the audit
// intent) at the same time: the begin record is written, its fsync runs
// while hook writes, and nothing moves until both have succeeded. A begin
// record may therefore be durable although hook failed or never finished:
// when hook fails, an abort record (fsync'd) says that nothing of b may
// happen; when the process dies first, the next start recovers b by
// identity, and Options.Recovering announces that recovery before it
// moves anything. Called with j.mu held. A begin record that cannot be
// written (a full disk) is cut back (unwrite) and the action refused: the
// same journal works again once there is room. A failed fsync, or an
// abort record that cannot be written, leaves the journal refusing actions
// until restart.
func (j *Journal) announce(b *record, hook Hook) error {
	before := j.size
	err := j.write(false, b)
	if err == nil {
		err = j.w.Flush()
	}
	if err != nil {
		return j.unwrite(before, err)
	}
	synced := make(chan error, 1)
	go func() { synced <- j.f.Sync() }()
	var herr error
	if hook != nil {
		herr = hook(&Action{ID: b.ID, Tool: b.Tool, Label: b.Label, Time: b.Time, Moves: b.Moves, Mkdirs: b.Mkdirs})
	}
	serr := <-synced
	if herr != nil {
		if err := j.write(true, &record{T: "abort", ID: b.ID}); err != nil {
			j.broken = ErrWrite.Wrap(err)
		}
		return herr
	}
	if serr != nil {
		j.broken = ErrWrite.Wrap(serr)
		return j.broken
	}
	return nil
}
