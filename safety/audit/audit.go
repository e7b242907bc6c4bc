package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/bastion-mcp/bastion/safety/ids"
	"github.com/bastion-mcp/bastion/safety/internal/fsx"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// The fail modes.
const (
	// FailClosed refuses the act when its intent cannot be recorded.
	FailClosed = "closed"
	// FailOpen reports a failed write to the logger and lets the act go on.
	FailOpen = "open"
)

// Keep is how many rotated files (FILE.1 ... FILE.5) rotation keeps when
// Options.Keep is 0.
const Keep = 5

// DefaultFile is the conventional name of the log file inside DefaultDir.
const DefaultFile = "audit.jsonl"

// Options configures Open.
type Options struct {
	// Path is the log file; it must be absolute. Its directory is created
	// 0700 if missing; the file is created 0600 (an existing file keeps its
	// mode) and is always opened O_APPEND, never through a symbolic link.
	// FILE.lock beside it serialises writers across processes.
	Path string
	// FailMode is "closed" (the default when empty) or "open"; anything
	// else is refused.
	FailMode string
	// Server names the writing server ("sweepd", "terminald", ...); it is
	// written into every record and named in operator messages.
	Server string
	// Roots are the operator roots the server may write in. Open refuses
	// (POLICY_DENIED, the reason names the root) a log whose directory lies
	// inside any of them, as written or once symbolic links are resolved,
	// or whose path passes through a symbolic link that lies inside one.
	Roots []string
	// Logger receives open-mode failures and rotation trouble; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxBytes rotates the file before a record would grow it past this
	// many bytes (0 = never rotate). A single record larger than MaxBytes
	// still goes into a file of its own.
	MaxBytes int64
	// Keep is how many rotated files rotation keeps, FILE.1 (the newest)
	// to FILE.<Keep>; the oldest beyond that is replaced. 0 means the
	// constant Keep.
	Keep int
}

// Log is an open audit log. It is safe for concurrent use, and several
// processes may hold the same log open.
type Log struct {
	path     string
	dir      string
	server   string
	openMode bool
	maxBytes int64
	keep     int
	logger   *slog.Logger

	mu     sync.Mutex
	closed bool
	lock   *os.File // FILE.lock, flock'd around every append
	head   head     // the chain head as this Log last saw it
	// pending is a recovery whose record is still to be written.
	pending *Recovery
	// known and knownSize identify the file as this Log left it after its
	// last write. When the file on disk differs (another process wrote,
	// rotated or replaced it, or a write failed), the head is re-read from
	// the file before the next record is chained.
	known     fs.FileInfo
	knownSize int64
	// lazy counts the background fsyncs of lazy records still running;
	// lazyErr is the failure of one, refusing the next record once.
	lazy    sync.WaitGroup
	lazyErr error
	// handOver, set under mu for one append (IntentPending), takes the
	// record's open file for the caller to fsync.
	handOver func(*os.File)
	// sent are the records this append wrote, for telemetry (only while
	// telemetry is on).
	sent []telemetry.AuditRecord
}

// Refusals and failures carried inside the errors this package returns.
var (
	errClosed     = result.New(result.AuditUnavailable, "the audit log has been closed")
	errEncode     = result.New(result.AuditUnavailable, "a field holds a value that cannot be written as JSON")
	errNotRegular = result.New(result.AuditUnavailable, "the audit log path is not a regular file")
)

// Open opens (creating if needed) the audit log described by opts, and
// verifies the whole current file to recover the sequence number and chain
// head and to find a change made in the middle of the chain. A torn tail is
// set aside into a sidecar file and recorded (see the package doc);
// rotation (MaxBytes) bounds how much Open reads.
//
// It refuses, with a *result.Error and whatever the fail mode (the fail mode
// governs records, not startup): bad options (INVALID_REQUEST); a log
// inside an operator root (POLICY_DENIED); a log it cannot create, lock or
// open (AUDIT_UNAVAILABLE, wrapping the OS error, e.g. ENOTDIR when a parent
// is a regular file). A log broken in the middle, or whose torn tail cannot
// be set aside, is refused in closed mode (AUDIT_UNAVAILABLE; the reason
// names the line and says to run `<server> audit verify FILE`); in open mode
// it is reported to the logger and the next record is appended after the
// break.
func Open(opts Options) (*Log, error) {
	if opts.Path == "" {
		return nil, result.New(result.InvalidRequest, "the audit log path is empty")
	}
	if !filepath.IsAbs(opts.Path) {
		return nil, result.New(result.InvalidRequest,
			fmt.Sprintf("the audit log path %q is not absolute", opts.Path))
	}
	path := filepath.Clean(opts.Path)
	dir := filepath.Dir(path)
	if base := filepath.Base(path); base == "." || base == ".." || base == string(filepath.Separator) || dir == path {
		return nil, result.New(result.InvalidRequest,
			fmt.Sprintf("the audit log path %q does not name a file", opts.Path))
	}
	openMode := false
	switch opts.FailMode {
	case "", FailClosed:
	case FailOpen:
		openMode = true
	default:
		return nil, result.New(result.InvalidRequest,
			fmt.Sprintf("the audit fail mode %q is neither %q nor %q", opts.FailMode, FailClosed, FailOpen))
	}
	if opts.Server == "" {
		return nil, result.New(result.InvalidRequest, "the audit log needs the server's name")
	}
	if opts.MaxBytes < 0 || opts.Keep < 0 {
		return nil, result.New(result.InvalidRequest, "the audit log's MaxBytes or Keep is negative")
	}
	keep := opts.Keep
	if keep == 0 {
		keep = Keep
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}

	// Check before creating anything, so no directory appears inside a
	// root; check again once the directory exists and resolves fully.
	if err := checkRoots(dir, opts.Roots); err != nil {
		return nil, err
	}
	_, statErr := os.Lstat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, result.Wrap(result.AuditUnavailable,
			fmt.Sprintf("cannot create the audit log directory %s", dir), err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		_ = fsx.SyncDir(filepath.Dir(dir)) // best effort: the new entry in the parent
	}
	if err := checkRoots(dir, opts.Roots); err != nil {
		return nil, err
	}

	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|fsx.NoFollow, 0o600)
	if err != nil {
		return nil, result.Wrap(result.AuditUnavailable,
			fmt.Sprintf("cannot open the audit lock file %s.lock", path), err)
	}
	l := &Log{
		path: path, dir: dir, server: opts.Server, openMode: openMode,
		maxBytes: opts.MaxBytes, keep: keep, logger: logger, lock: lock, head: genesis,
	}
	if err := l.load(); err != nil {
		lock.Close()
		return nil, err
	}
	return l, nil
}

// load reads the chain head from the file, creating the file if missing.
// It verifies the whole file, so a record changed in the middle is found at
// start, and sets a torn tail aside (see mend).
func (l *Log) load() error {
	if err := fsx.Lock(l.lock); err != nil {
		return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot lock the audit log %s", l.path), err)
	}
	defer fsx.Unlock(l.lock)
	f, created, err := l.openFile()
	if err != nil {
		return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot open the audit log %s", l.path), err)
	}
	t := &target{f: f, created: created}
	defer t.close()
	if t.fi, err = statRegular(f); err != nil {
		return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot use the audit log %s", l.path), err)
	}
	t.size = t.fi.Size()
	if created {
		if err := fsx.SyncDir(l.dir); err != nil {
			return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot sync the audit log directory %s", l.dir), err)
		}
	}
	_, ok, err := quickChain(io.NewSectionReader(t.f, 0, t.size))
	var rep Report
	if err == nil && !ok {
		rep, err = scan(t)
	}
	if err != nil {
		return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot read the audit log %s", l.path), err)
	}
	if !ok && !rep.OK {
		if _, err := l.mend(t, rep); err != nil {
			return startError(l.path, err)
		}
		return nil
	}
	st, err := l.state(t.f, t.size)
	if err != nil {
		return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot read the end of the audit log %s", l.path), err)
	}
	l.head = st.head
	if st.broken != "" { // the log is empty and its rotated predecessor's tail is broken
		msg := describeBroken(l.server, st.fileOr(l.path), st.broken)
		if !l.openMode {
			return result.New(result.AuditUnavailable, msg)
		}
		l.logger.Warn("audit: "+msg+"; continuing after the break because the audit fail mode is open",
			"server", l.server, "path", l.path)
		l.known = nil
		return nil
	}
	l.known, l.knownSize = t.fi, t.size
	return nil
}

// startError is the error Open returns for a failure of mend: a damaged
// log's message as the reason, anything else wrapped.
func startError(path string, err error) error {
	var d *damaged
	if errors.As(err, &d) {
		return result.New(result.AuditUnavailable, d.msg)
	}
	return result.Wrap(result.AuditUnavailable, fmt.Sprintf("cannot repair the audit log %s", path), err)
}

// Path returns the log file's path as cleaned by Open.
func (l *Log) Path() string { return l.path }

// Intent records that the server is about to perform action, and returns the
// intent's id ("i-<seq>") for the matching Outcome. fields is written as a
// JSON object (nil as {}); strings that are not valid UTF-8 come out with
// U+FFFD in place of the bad bytes, so a caller recording names that may not
// be UTF-8 should quote them first (strconv.Quote keeps every byte).
//
// In closed mode a record that cannot be written and fsync'd returns a
// *result.Error with code AUDIT_UNAVAILABLE, and the caller must not act. In
// open mode the failure goes to the logger, the error is nil and the id is
// "i-unrecorded-<random>": still unique, still accepted by Outcome, and
// telling a reader of the outcome that its intent was never written.
func (l *Log) Intent(action string, fields map[string]any) (string, error) {
	seq, err := l.append(KindIntent, action, nil, nil, fields, false, nil)
	if err == nil {
		return intentID(seq), nil
	}
	if l.openMode {
		l.warn(KindIntent, action, err)
		return ids.New("i-unrecorded"), nil
	}
	return "", result.Wrap(result.AuditUnavailable,
		"the audit log could not record the intent ("+why(err)+"), so the request was refused before anything was done", err)
}

// IntentPending is Intent whose fsync the caller waits for when it is
// ready to, so that it can prepare the act meanwhile: the record is
// written (one write(2), so every reader of the log sees it) and its fsync
// started (fsx.StartFsync: run by the kernel, no thread of ours held,
// where Linux AIO is available; else run by durable on the caller's
// thread) before IntentPending returns, and durable waits for that fsync.
// The caller must not act before durable has
// returned nil, and must call it in any case (Close waits for it): in
// closed mode a record that could not be made durable returns
// AUDIT_UNAVAILABLE there (the record stays in the log, an intent without
// an outcome, as after a crash), and in open mode the failure goes to the
// logger and durable returns nil. A record that cannot be written at all
// is refused here, as by Intent. durable may be called more than once.
func (l *Log) IntentPending(action string, fields map[string]any) (id string, durable func() error, err error) {
	var f *os.File
	var wait func() error
	seq, err := l.append(KindIntent, action, nil, nil, fields, true, func(file *os.File) {
		f = file
		l.lazy.Add(1)
		// Started now, waited for in durable: the fsync runs while the
		// caller prepares the act.
		wait = startSync(file)
	})
	if err != nil {
		if l.openMode {
			l.warn(KindIntent, action, err)
			return ids.New("i-unrecorded"), func() error { return nil }, nil
		}
		return "", nil, result.Wrap(result.AuditUnavailable,
			"the audit log could not record the intent ("+why(err)+"), so the request was refused before anything was done", err)
	}
	var once sync.Once
	var derr error
	durable = func() error {
		once.Do(func() {
			if f == nil {
				return // fsync'd before IntentPending returned
			}
			defer l.lazy.Done()
			ferr := wait()
			f.Close()
			switch {
			case ferr == nil:
			case l.openMode:
				l.warn(KindIntent, action, ferr)
			default:
				derr = result.Wrap(result.AuditUnavailable,
					"the audit log could not make the intent durable ("+why(ferr)+"), so nothing was done", ferr)
			}
		})
		return derr
	}
	return intentID(seq), durable, nil
}

// Outcome records how the act announced by intentID ended: code is its
// result code, fields any detail worth keeping. In closed mode a failed
// write returns AUDIT_UNAVAILABLE; the act has already happened, so the
// caller should still report it, and should not start another. In open mode
// the failure goes to the logger and the error is nil.
func (l *Log) Outcome(intentID, action string, code result.Code, fields map[string]any) error {
	return l.outcome(intentID, action, code, fields, false)
}

// OutcomeLazy is Outcome for an act whose crash recovery does not read the
// audit log (organizerd's journal re-finds every move by identity): the
// record is written, and so read by anyone who reads the log, before it
// returns, and fsync'd in the background right away (or by the next
// record's fsync, whichever comes first). A crash in that window may lose
// the record, leaving its intent without an outcome, as a crash just
// before Outcome would. A write that fails is cut back and refused as in
// Outcome; a background fsync that fails refuses the next record once.
// Close waits for the background fsyncs.
func (l *Log) OutcomeLazy(intentID, action string, code result.Code, fields map[string]any) error {
	return l.outcome(intentID, action, code, fields, true)
}

func (l *Log) outcome(intentID, action string, code result.Code, fields map[string]any, lazy bool) error {
	_, err := l.append(KindOutcome, action, &intentID, &code, fields, lazy, nil)
	if err == nil {
		return nil
	}
	if l.openMode {
		l.warn(KindOutcome, action, err)
		return nil
	}
	return result.Wrap(result.AuditUnavailable,
		"the audit log could not record the outcome ("+why(err)+"); the operation itself had already run", err)
}

// Event records something that is neither an intent nor an outcome, such as
// a startup or a loaded configuration. Failures follow the fail mode as for
// Intent.
func (l *Log) Event(action string, fields map[string]any) error {
	_, err := l.append(KindEvent, action, nil, nil, fields, false, nil)
	if err == nil {
		return nil
	}
	if l.openMode {
		l.warn(KindEvent, action, err)
		return nil
	}
	return result.Wrap(result.AuditUnavailable,
		"the audit log could not record the event ("+why(err)+")", err)
}

// Close waits for the background fsyncs of lazy records and releases the
// log. Later records fail as any failed write does (AUDIT_UNAVAILABLE in
// closed mode). Close is idempotent.
func (l *Log) Close() error {
	l.lazy.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.lock.Close()
}

// why is the client-safe account of err: Bastion's own reason when err
// carries one, the errno table's words otherwise. It never shows a path.
func why(err error) string {
	_, reason := result.Classify(err)
	return reason
}

func (l *Log) warn(kind, action string, err error) {
	l.logger.Warn("audit: record not written; continuing because the audit fail mode is open",
		"server", l.server, "kind", kind, "action", action, "path", l.path, "error", err.Error())
}
