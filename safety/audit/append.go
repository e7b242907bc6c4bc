package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strconv"
	"time"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// append writes one record and returns its seq. Every failure leaves the
// file ending in a whole record (a partly written line is cut back) or
// leaves this Log unsure of the file, so the next append re-reads it.
// A lazy record is written before append returns and fsync'd in the
// background (see OutcomeLazy), or, with handOver, its open file is handed
// to handOver (under the lock, right after the write) for the caller to
// fsync (IntentPending); handOver is not called when the record was
// fsync'd before append returned (a file this append created, or one
// after a torn line).
func (l *Log) append(kind, action string, intent *string, code *result.Code, fields map[string]any, lazy bool, handOver func(*os.File)) (int64, error) {
	seq, sent, err := l.appendOne(kind, action, intent, code, fields, lazy, handOver)
	// Telemetry hears of the record after the lock is released: export
	// never delays the next append, and never replaces this one.
	if err != nil {
		telemetry.AuditFailure(action)
	}
	for _, r := range sent {
		telemetry.Audit(r)
	}
	return seq, err
}

// appendOne is append under the lock; it also returns the records written
// (a pending recovery record, then this one) for telemetry.
func (l *Log) appendOne(kind, action string, intent *string, code *result.Code, fields map[string]any, lazy bool, handOver func(*os.File)) (int64, []telemetry.AuditRecord, error) {
	if fields == nil {
		fields = map[string]any{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() { l.sent, l.handOver = nil, nil }()
	l.handOver = handOver
	seq, err := l.appendChecked(kind, action, intent, code, fields, lazy)
	return seq, l.sent, err
}

// appendChecked is appendOne's body.
func (l *Log) appendChecked(kind, action string, intent *string, code *result.Code, fields map[string]any, lazy bool) (int64, error) {
	if l.closed {
		return 0, errClosed
	}
	if err := l.lazyErr; err != nil {
		// Reported once: the next record's own fsync proves the disk again.
		l.lazyErr, l.known = nil, nil
		return 0, fmt.Errorf("audit: an earlier record of %s could not be made durable: %w", l.path, err)
	}
	if err := fsx.Lock(l.lock); err != nil {
		l.known = nil
		return 0, fmt.Errorf("audit: lock %s.lock: %w", l.path, err)
	}
	defer fsx.Unlock(l.lock)
	seq, err := l.appendLocked(record{Kind: kind, Server: l.server, Action: action, Intent: intent, Code: code, Fields: fields}, lazy)
	if err != nil {
		l.known = nil
	}
	return seq, err
}

// appendLocked chains rec to the file's head and writes it; the caller
// holds the lock and forgets what it knew of the file when this fails.
func (l *Log) appendLocked(rec record, lazy bool) (int64, error) {
	t, err := l.openTarget("open " + l.path)
	if err != nil {
		return 0, err
	}
	defer t.close()
	prefix, err := l.catchUp(t)
	if err != nil {
		return 0, err
	}
	if prefix == nil {
		if err := l.writePending(t); err != nil {
			return 0, err
		}
	}
	// Only the record itself may be lazy, and not after a torn line.
	t.lazy = lazy && prefix == nil
	return l.writeRecord(t, prefix, rec)
}

// writeRecord chains rec to l.head, writes it to t after prefix, and moves
// the head and what this Log knows of the file past it.
func (l *Log) writeRecord(t *target, prefix []byte, rec record) (int64, error) {
	rec.Seq, rec.Prev = l.head.seq+1, l.head.hash
	rec.Time = time.Now().UTC().Format(time.RFC3339Nano)
	line, err := encodeLine(prefix, &rec)
	if err != nil {
		return 0, err // nothing written
	}
	if err := l.rotateIfFull(t, len(line), prefix != nil); err != nil {
		return 0, err
	}
	if err := l.writeLine(t, line); err != nil {
		return 0, err
	}
	// The record's line as hashed: no torn-line prefix, no newline.
	l.head = head{seq: rec.Seq, hash: hashLine(line[len(prefix) : len(line)-1])}
	t.size += int64(len(line))
	l.known, l.knownSize = t.fi, t.size
	if telemetry.Enabled() {
		l.sent = append(l.sent, exported(rec, line[len(prefix):len(line)-1], l.head.hash))
	}
	return rec.Seq, nil
}

// exported is rec as telemetry takes it: its own copy of the line and of
// the fields' top level, which a worker reads after the caller has moved on.
func exported(rec record, line []byte, hash string) telemetry.AuditRecord {
	r := telemetry.AuditRecord{Seq: rec.Seq, Prev: rec.Prev, Hash: hash, Kind: rec.Kind, Server: rec.Server,
		Action: rec.Action, Fields: maps.Clone(rec.Fields), Line: append([]byte(nil), line...)}
	r.Time, _ = time.Parse(time.RFC3339Nano, rec.Time)
	if rec.Code != nil {
		r.Code = string(*rec.Code)
	}
	return r
}

// target is the log file one append writes to, opened and stat'ed under
// the lock.
type target struct {
	f       *os.File
	created bool // this append created the file
	fi      fs.FileInfo
	size    int64 // the file's size before the record
	lazy    bool  // fsync the record in the background (OutcomeLazy)
}

// openTarget opens the log file (creating it if missing) and checks that it
// is a regular file; what names the step in the error.
func (l *Log) openTarget(what string) (*target, error) {
	f, created, err := l.openFile()
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", what, err)
	}
	fi, err := statRegular(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %s: %w", l.path, err)
	}
	return &target{f: f, created: created, fi: fi, size: fi.Size()}, nil
}

func (t *target) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

// catchUp re-reads the chain head from the file when the file is not as
// this Log left it (another process wrote, rotated or replaced it, or a
// write failed). A torn tail found there (another writer crashed, or a
// failed write could not be cut back) is set aside as at Open. It returns
// what must precede the record: a newline that closes a torn last line,
// which only open mode appends after.
func (l *Log) catchUp(t *target) (prefix []byte, err error) {
	if l.known != nil && l.knownSize == t.size && os.SameFile(l.known, t.fi) {
		return nil, nil
	}
	st, err := l.state(t.f, t.size)
	if err != nil {
		return nil, fmt.Errorf("audit: read the end of %s: %w", l.path, err)
	}
	if st.broken == "" {
		l.head = st.head
		return nil, nil
	}
	l.known = nil
	if st.file == "" { // the log's own tail: check the whole file and mend it
		rep, err := scan(t)
		if err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", l.path, err)
		}
		if !rep.OK {
			prefix, err = l.mend(t, rep)
			return prefix, l.clientError(err)
		}
	}
	broken := describeBroken(l.server, st.fileOr(l.path), st.broken)
	if !l.openMode {
		return nil, l.clientError(&damaged{broken})
	}
	l.logger.Warn("audit: "+broken+"; appending after the break because the audit fail mode is open",
		"server", l.server, "path", l.path)
	if st.partial {
		prefix = []byte{'\n'}
	}
	l.head = st.head
	return prefix, nil
}

// clientError turns a damaged log into AUDIT_UNAVAILABLE with a reason
// that sends the operator to audit verify without naming the path (the
// path stays in the wrapped error, for the server's own log).
func (l *Log) clientError(err error) error {
	var d *damaged
	if !errors.As(err, &d) {
		return err
	}
	return result.Wrap(result.AuditUnavailable,
		"the log is damaged: a record is incomplete, unreadable or does not link to the one before, and an operator must run `"+
			l.server+" audit verify` on it", err)
}

// encodeLine renders rec as prefix, its JSON and a newline. HTML escaping
// is off so that a command such as "a && b" reads as written.
func encodeLine(prefix []byte, rec *record) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	buf.Write(prefix)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, errEncode.Wrap(err)
	}
	return buf.Bytes(), nil
}

// rotateIfFull rotates the log before a line of n bytes would grow it past
// MaxBytes, and moves t to the new, empty file. A file that ends in a torn
// line is not rotated (the line that closes it goes first). A failed
// rotation is logged, and the record goes to the current file, which is
// still in place (it is renamed last).
func (l *Log) rotateIfFull(t *target, n int, prefixed bool) error {
	if l.maxBytes <= 0 || t.size == 0 || prefixed || t.size+int64(n) <= l.maxBytes {
		return nil
	}
	if err := l.shift(); err != nil {
		l.logger.Warn("audit: rotation failed; appending to the current file",
			"server", l.server, "path", l.path, "error", err.Error())
		return nil
	}
	t.close()
	nt, err := l.openTarget("create " + l.path + " after rotation")
	if err != nil {
		return err
	}
	*t = *nt
	return nil
}

// writeLine writes line with one write(2), then fsyncs it; a file this
// append created also needs its directory entry made durable. On failure a
// partly written line is cut back, so the file still ends in a whole
// record. A lazy record of an existing file is fsync'd by syncLater.
func (l *Log) writeLine(t *target, line []byte) error {
	n, err := t.f.Write(line)
	if err == nil && t.lazy && !t.created && l.handOver != nil {
		// IntentPending: the caller fsyncs it (durable), on its own thread.
		l.handOver(t.f)
		l.handOver = nil
		t.f = nil
		return nil
	}
	if err == nil && t.lazy && !t.created {
		l.syncLater(t.f)
		t.f = nil // syncLater closes it
		return nil
	}
	if err == nil {
		err = syncFile(t.f)
	}
	if err == nil && t.created {
		err = fsx.SyncDir(l.dir)
	}
	if err != nil {
		if n > 0 {
			if terr := t.f.Truncate(t.size); terr == nil {
				_ = t.f.Sync()
			}
		}
		return fmt.Errorf("audit: write %s: %w", l.path, err)
	}
	return nil
}

// syncFile fsyncs a record: fsx.Fsync, which waits without holding an OS
// thread where it can; startSync starts that fsync and returns the wait
// (IntentPending's, so that it runs while the caller prepares the act). A
// test replaces both (swapSync) to make an fsync fail.
var (
	syncFile  = fsx.Fsync
	startSync = fsx.StartFsync
	syncThen  = fsx.FsyncThen
)

// syncLater fsyncs f, holding a lazy record, in the background and closes
// it. Close waits for it. A failure is kept and refuses the next record
// once (AUDIT_UNAVAILABLE in closed mode): the record was written and read
// back by every reader, but a power loss may take it.
func (l *Log) syncLater(f *os.File) {
	l.lazy.Add(1)
	// No goroutine of its own where AIO does the fsync: the result is
	// handled by the goroutine that collects completions.
	syncThen(f, func(err error) {
		f.Close()
		if err == nil {
			l.lazy.Done()
			return
		}
		// Off the goroutine that collects completions: the log's lock may
		// be held by an append waiting for its own fsync, which that
		// goroutine delivers.
		go func() {
			defer l.lazy.Done()
			l.logger.Error("audit: a record written before the answer could not be fsync'd; the next record is refused once",
				"server", l.server, "path", l.path, "error", err.Error())
			l.mu.Lock()
			l.lazyErr = err
			l.mu.Unlock()
		}()
	})
}

// openFile opens the log for appending, creating it (0600) if missing. It
// never follows a symbolic link at the file itself.
func (l *Log) openFile() (f *os.File, created bool, err error) {
	for range 3 {
		f, err = fsx.OpenNoPoll(l.path, os.O_RDWR|os.O_APPEND|fsx.NoFollow, 0)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, false, err
		}
		f, err = fsx.OpenNoPoll(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|fsx.NoFollow, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err == nil, err
		}
	}
	return nil, false, err
}

func statRegular(f *os.File) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	return fi, nil
}

// state reads the chain head from the end of f. An empty file continues
// the chain of FILE.1 when that is the latest chain known (a rotation by
// this or another process), or the chain this Log last wrote (the file was
// removed or emptied behind its back), or else starts a new chain.
func (l *Log) state(f *os.File, size int64) (tailState, error) {
	st, empty, err := readTail(f, size)
	if err != nil || !empty {
		return st, err
	}
	best := l.head
	pred := l.path + ".1"
	pf, err := os.OpenFile(pred, os.O_RDONLY|fsx.NoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return tailState{head: best}, nil
	}
	if err != nil {
		return tailState{}, err
	}
	defer pf.Close()
	pfi, err := statRegular(pf)
	if err != nil {
		return tailState{}, err
	}
	pst, pempty, err := readTail(pf, pfi.Size())
	if err != nil {
		return tailState{}, err
	}
	switch {
	case pempty:
	case pst.broken != "":
		return tailState{head: pst.head, broken: pst.broken + " (the log itself is empty and would continue this file's chain)", file: pred}, nil
	case pst.head.seq >= best.seq:
		best = pst.head
	}
	return tailState{head: best}, nil
}

// shift renames FILE.<keep-1> to FILE.<keep> (replacing it), ..., FILE to
// FILE.1. FILE is renamed last, so on any error it is still in place.
func (l *Log) shift() error {
	for i := l.keep - 1; i >= 1; i-- {
		err := os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return err
	}
	if err := fsx.SyncDir(l.dir); err != nil {
		l.logger.Warn("audit: could not sync the directory after rotation",
			"server", l.server, "dir", l.dir, "error", err.Error())
	}
	return nil
}
