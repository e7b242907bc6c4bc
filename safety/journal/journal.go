package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// Move is one planned move: Src and Dst are cleaned paths relative to the
// workspace root; State is what the object at Src was when it was checked.
type Move struct {
	Src   string         `json:"src"`
	Dst   string         `json:"dst"`
	State jail.FileState `json:"state"`
}

// Action is one undoable unit: an applied plan, or one move.
type Action struct {
	ID     uint64    `json:"id"`
	Tool   string    `json:"tool"`
	Label  string    `json:"label,omitempty"`
	Time   time.Time `json:"time"`
	Moves  []Move    `json:"moves"`
	Mkdirs []string  `json:"mkdirs,omitempty"` // directories the action created, outermost first
}

// Failure is one file an action could not move, or one reason it was refused.
type Failure struct {
	Src    string      `json:"src"`
	Dst    string      `json:"dst"`
	Code   result.Code `json:"code"`
	Reason string      `json:"reason"`
}

// Outcome reports what an action did.
type Outcome struct {
	// Action holds the moves that happened (nil when the action was refused).
	Action *Action
	// Failed lists refusals (nothing moved) or, after a start, the moves
	// that could not be made.
	Failed []Failure
}

// Recovered describes one interrupted action found at Open.
type Recovered struct {
	ID        uint64 `json:"id"`
	Op        string `json:"op"`
	Tool      string `json:"tool"`
	Completed int    `json:"completed"` // moves that are now done
	Dropped   int    `json:"dropped"`   // moves that could not be completed (file gone, or destination taken)
}

// Options tune a Journal.
type Options struct {
	// BatchMoves is how many completed moves are recorded per fsync (default 4096).
	BatchMoves int
	// BatchInterval bounds how long a completed move may wait for its record's fsync (default 250ms).
	BatchInterval time.Duration
	// MaxUndo is how many actions the undo stack keeps (default 50).
	MaxUndo int
	// Logger receives recovery and compaction notes; nil discards them.
	Logger *slog.Logger
	// Recovering is called at Open with each interrupted action before its
	// recovery moves anything (the audit intent of the recovery: an action
	// whose begin record was durable may have crashed before its own intent
	// was); an error fails Open, and nothing moves.
	Recovering Hook
}

// Errors of the journal.
var (
	ErrNothingToUndo = result.New(result.NotFound, "there is nothing to undo")
	ErrNothingToRedo = result.New(result.NotFound, "there is nothing to redo (new work clears the redo stack)")
	ErrRefused       = result.New(result.Stale, "something changed since it was checked, so nothing was moved; see the per-file reasons")
	ErrBusy          = result.New(result.PolicyDenied, "another organizerd is using this journal")
	ErrCorrupt       = result.New(result.OperationFailed, "the journal is damaged in the middle (not just at its end, which is set aside); move it aside to start fresh, the files themselves are untouched")
	ErrWrite         = result.New(result.OperationFailed, "the journal could not be written and synced, so nothing was moved")
)

const (
	opDo   = "do"
	opUndo = "undo"
	opRedo = "redo"
)

type record struct {
	T      string    `json:"t"`
	ID     uint64    `json:"id,omitempty"`
	Op     string    `json:"op,omitempty"`
	Of     uint64    `json:"of,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	Label  string    `json:"label,omitempty"`
	Time   time.Time `json:"time,omitzero"`
	Moves  []Move    `json:"moves,omitempty"`
	Mkdirs []string  `json:"mkdirs,omitempty"`
	I      []int     `json:"i,omitempty"`
	All    bool      `json:"all,omitempty"`
	Keep   []int     `json:"keep,omitempty"`
	// state snapshot
	Next uint64    `json:"next,omitempty"`
	Undo []*Action `json:"undo,omitempty"`
	Redo []*Action `json:"redo,omitempty"`
}

// Journal is an open journal bound to one workspace root. Its methods are
// safe for concurrent use; actions run one at a time.
type Journal struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	w      *bufio.Writer
	size   int64
	unlock func()
	root   *jail.Root
	o      Options
	log    *slog.Logger

	next    uint64
	undo    []*Action
	redo    []*Action
	pending map[uint64]*record

	open   *unsettled // the latest action, until its directories and commit are durable
	broken error      // set when an action's end could not be made durable
	tail   *Tail      // the damaged tail Open set aside
}

// Open opens (creating if needed) the journal at path for root, replays it,
// recovers an interrupted action by identity, and compacts the file to the
// current stacks (temp file, fsync, rename, fsync of the directory). A
// compaction that cannot be made durable, the directory fsync included,
// fails Open with ErrWrite wrapping the cause.
func Open(path string, root *jail.Root, o Options) (*Journal, []Recovered, error) {
	if o.BatchMoves <= 0 {
		o.BatchMoves = 4096
	}
	if o.BatchInterval <= 0 {
		o.BatchInterval = 250 * time.Millisecond
	}
	if o.MaxUndo <= 0 {
		o.MaxUndo = 50
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, result.Wrap(result.OperationFailed, "the journal's directory cannot be created", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, nil, err
	}
	j := &Journal{path: path, root: root, o: o, log: log, next: 1, pending: map[uint64]*record{}, unlock: unlock}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		unlock()
		return nil, nil, result.New(result.PolicyDenied, "the journal path is not a regular file (symlinks are never followed)")
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		unlock()
		return nil, nil, result.Wrap(result.OperationFailed, "the journal cannot be read", err)
	}
	keep, err := j.replay(data)
	if err == nil && len(bytes.TrimSpace(data[keep:])) > 0 {
		err = j.setAside(data[keep:], keep)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	// Start writing on a compacted copy, then recover the interrupted action
	// (its begin record is carried over so that a crash during recovery
	// recovers again).
	var rec []Recovered
	interrupted := make([]*record, 0, len(j.pending))
	for _, p := range j.pending {
		interrupted = append(interrupted, p)
	}
	sort.Slice(interrupted, func(a, b int) bool { return interrupted[a].ID < interrupted[b].ID })
	if err := j.compact(interrupted); err != nil {
		j.Close() // the file compact may have opened, and the lock
		return nil, nil, err
	}
	for _, p := range interrupted {
		if o.Recovering != nil {
			if err := o.Recovering(&Action{ID: p.ID, Tool: p.Tool, Label: p.Label, Time: p.Time, Moves: p.Moves, Mkdirs: p.Mkdirs}); err != nil {
				j.Close()
				return nil, nil, err
			}
		}
		r, err := j.recover(p)
		if err != nil {
			j.Close()
			return nil, nil, err
		}
		log.Warn("journal: recovered an interrupted action", "id", r.ID, "op", r.Op, "completed", r.Completed, "dropped", r.Dropped)
		rec = append(rec, r)
	}
	return j, rec, nil
}

// replay rebuilds the stacks from the journal's valid records and returns
// the offset at which its damaged tail, if any, begins (see decode).
func (j *Journal) replay(data []byte) (keep int, err error) {
	recs, keep, err := decode(data)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if err := j.apply(r); err != nil {
			return 0, err
		}
	}
	return keep, nil
}

// apply updates the in-memory state with one record.
func (j *Journal) apply(r *record) error {
	switch r.T {
	case "state":
		j.next, j.undo, j.redo = max(r.Next, 1), r.Undo, r.Redo
		j.pending = map[uint64]*record{}
		for _, a := range append(append([]*Action(nil), r.Undo...), r.Redo...) {
			j.next = max(j.next, a.ID+1) // ids are never reused
		}
	case "begin":
		j.pending[r.ID] = r
		if r.ID >= j.next {
			j.next = r.ID + 1
		}
	case "done":
		// Informative only: recovery reads the filesystem.
	case "abort":
		delete(j.pending, r.ID) // its announcement failed: nothing of it happened
	case "commit":
		p := j.pending[r.ID]
		if p == nil {
			return ErrCorrupt
		}
		delete(j.pending, r.ID)
		j.commitState(p, r.All, r.Keep)
	default:
		return ErrCorrupt
	}
	return nil
}

func split(moves []Move, all bool, keep []int) (kept, rest []Move) {
	if all {
		return moves, nil
	}
	in := map[int]bool{}
	for _, i := range keep {
		in[i] = true
	}
	for i, m := range moves {
		if in[i] {
			kept = append(kept, m)
		} else {
			rest = append(rest, m)
		}
	}
	return kept, rest
}

func reverse(moves []Move) []Move {
	out := make([]Move, len(moves))
	for i, m := range moves {
		out[i] = Move{Src: m.Dst, Dst: m.Src, State: m.State}
	}
	return out
}

// commitState moves a committed action onto the right stack. An undo or
// redo that completed only partly splits its action: the part that moved
// goes to the other stack, the rest stays.
func (j *Journal) commitState(p *record, all bool, keep []int) {
	switch p.Op {
	case opDo:
		kept, _ := split(p.Moves, all, keep)
		if len(kept) > 0 {
			j.undo = append(j.undo, &Action{ID: p.ID, Tool: p.Tool, Label: p.Label, Time: p.Time, Moves: kept, Mkdirs: p.Mkdirs})
			if len(j.undo) > j.o.MaxUndo && j.o.MaxUndo > 0 {
				j.undo = j.undo[len(j.undo)-j.o.MaxUndo:]
			}
		}
		j.redo = nil
	case opUndo, opRedo:
		from, to := &j.undo, &j.redo
		if p.Op == opRedo {
			from, to = &j.redo, &j.undo
		}
		var a *Action
		for i := len(*from) - 1; i >= 0; i-- {
			if (*from)[i].ID == p.Of {
				a = (*from)[i]
				*from = append((*from)[:i:i], (*from)[i+1:]...)
				break
			}
		}
		if a == nil {
			return
		}
		// p.Moves are a's moves in the same order, reversed for undo.
		kept, rest := split(a.Moves, all, keep)
		if len(rest) > 0 {
			*from = append(*from, &Action{ID: a.ID, Tool: a.Tool, Label: a.Label, Time: a.Time, Moves: rest, Mkdirs: a.Mkdirs})
		}
		if len(kept) > 0 {
			*to = append(*to, &Action{ID: a.ID, Tool: a.Tool, Label: a.Label, Time: a.Time, Moves: kept, Mkdirs: a.Mkdirs})
		}
	}
}

// compact rewrites the journal as one state record plus the begin records
// of actions still to recover, atomically (temp file, fsync, rename, fsync
// of the directory), and opens it for appending. When the directory fsync
// fails, the journal is already open on the new file, and the error is
// returned: the rename may not survive a crash.
func (j *Journal) compact(keep []*record) error {
	dir := filepath.Dir(j.path)
	if err := j.writeCompacted(dir, keep); err != nil {
		return err
	}
	if err := j.reopen(); err != nil {
		return err
	}
	if err := fsx.SyncDir(dir); err != nil {
		return ErrWrite.Wrap(err)
	}
	return nil
}

// writeCompacted writes the state record and keep to a temporary file in
// dir, fsyncs it and renames it over the journal.
func (j *Journal) writeCompacted(dir string, keep []*record) error {
	tmp, err := os.CreateTemp(dir, ".organizerd-journal-*")
	if err != nil {
		return ErrWrite.With("the journal's directory is not writable", err)
	}
	bw := bufio.NewWriterSize(tmp, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err = enc.Encode(&record{T: "state", Next: j.next, Undo: j.undo, Redo: j.redo})
	for _, p := range keep {
		if err == nil {
			err = enc.Encode(p)
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), j.path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return ErrWrite.Wrap(err)
	}
	tmp.Close()
	return nil
}

// reopen opens the journal file for appending in place of the one open.
func (j *Journal) reopen() error {
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return ErrWrite.Wrap(err)
	}
	if j.f != nil {
		j.f.Close()
	}
	st, _ := f.Stat()
	j.f, j.w = f, bufio.NewWriterSize(f, 1<<16)
	if st != nil {
		j.size = st.Size()
	}
	return nil
}

// lockFile takes an exclusive, non-blocking flock on path, creating it; the
// kernel drops the lock when the process dies, however it dies. Where flock
// is absent it does nothing: one journal must have one organizerd
// (documented).
func lockFile(path string) (func(), error) {
	if !fsx.CanLock {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|fsx.NoFollow, 0o600)
	if err != nil {
		return nil, result.Wrap(result.OperationFailed, "the journal's lock file cannot be opened", err)
	}
	if err := fsx.TryLock(f); err != nil {
		f.Close()
		return nil, ErrBusy
	}
	return func() { f.Close() }, nil
}

// write appends records; with sync, flushes and fsyncs.
func (j *Journal) write(sync bool, rs ...*record) error {
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			return ErrWrite.Wrap(err)
		}
		b = append(b, '\n')
		if _, err := j.w.Write(b); err != nil {
			return ErrWrite.Wrap(err)
		}
		j.size += int64(len(b))
	}
	if sync {
		if err := j.w.Flush(); err != nil {
			return ErrWrite.Wrap(err)
		}
		if err := j.f.Sync(); err != nil {
			return ErrWrite.Wrap(err)
		}
	}
	return nil
}

// Close releases the journal.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.settle(); err != nil {
		j.log.Error("journal: closing with an action whose end is not durable; the next start resolves it", "err", err)
	}
	var err error
	if j.f != nil {
		_ = j.w.Flush()
		err = j.f.Close()
		j.f = nil
	}
	if j.unlock != nil {
		j.unlock()
		j.unlock = nil
	}
	return err
}

// Peek returns copies of the actions on top of the undo and redo stacks (nil when empty).
func (j *Journal) Peek() (undo, redo *Action) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n := len(j.undo); n > 0 {
		a := *j.undo[n-1]
		undo = &a
	}
	if n := len(j.redo); n > 0 {
		a := *j.redo[n-1]
		redo = &a
	}
	return undo, redo
}

// Depth returns the sizes of the undo and redo stacks.
func (j *Journal) Depth() (undo, redo int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.undo), len(j.redo)
}
