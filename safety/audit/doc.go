// Package audit keeps Bastion's audit log: an append-only JSONL file, one
// record per line, each record carrying the SHA-256 of the line before it,
// each line fsync'd before the call returns.
//
// A server records an intent before every destructive act and an outcome
// after it:
//
//	id, err := log.Intent("reclaim", map[string]any{"path": p})
//	if err != nil {
//		return result.Fail("reclaim", err, nil, start) // AUDIT_UNAVAILABLE: do not act
//	}
//	actErr := act()
//	_ = log.Outcome(id, "reclaim", result.CodeOf(actErr), map[string]any{"bytes": n})
//
// # What it refuses
//
//   - To let an act go unrecorded. In the default "closed" fail mode, an
//     intent that cannot be written and fsync'd is an error with code
//     AUDIT_UNAVAILABLE, and the caller must not act. Only a fail mode of
//     "open", set on purpose in a visible policy file, turns that into a
//     warning on an slog.Logger.
//   - To write to a log whose chain is broken inside. Open verifies the
//     whole current file (rotation bounds it): a record that does not link
//     to the one before, or a line that is not a record with a record after
//     it, means the file was changed in place (tampering or disk
//     corruption), and Open
//     refuses it in closed mode with a reason that names the line and asks
//     the operator to run `<server> audit verify FILE`; in open mode it is
//     reported to the logger and records go on after the break.
//   - To stop for a crash. A torn tail, an incomplete last line or
//     lines after the last record of which none is a record (what a crash
//     mid-write or a power loss leaves), is not tampering: Open, and any
//     append that finds one, copies it byte for byte into a sidecar file
//     beside the log (FILE.torn-<UTC time>), fsyncs it, cuts the log back
//     to its last whole record and appends an event record with action
//     "recovered" whose fields give the sidecar's name, its length in
//     bytes, its SHA-256 and what was wrong. The chain goes on after it,
//     and `audit verify` reports the recovery, not a break. If the tail
//     cannot be set aside (a full disk), closed mode refuses as above. If
//     it is set aside but the recovered record then finds no room, open
//     mode writes that record before the next one; closed mode refuses to
//     start, and the sidecar, which no record names then, keeps the bytes.
//   - To leave a torn record behind. A write that fails half-way (ENOSPC,
//     EIO) is cut back to the previous record and refused
//     (AUDIT_UNAVAILABLE); the same Log writes again once the disk has
//     room, with no restart.
//   - To live where the server can write. Open refuses a log whose
//     directory lies inside any operator root, checked both as written and
//     after resolving symbolic links, including every link passed on the way,
//     because a server that could write there could rewrite its own trail.
//   - To follow a symbolic link at the log file itself.
//
// # Record format
//
//	{"seq":7,"time":"2026-11-30T12:00:00.123456789Z","kind":"outcome","server":"sweepd",
//	 "action":"reclaim","intent":"i-6","code":"OK","fields":{...},"prev":"<64 hex>"}
//
// seq rises by exactly one per record, across rotated files too. prev is the
// lowercase hex SHA-256 of the previous record's line as written, without its
// newline; the first record of a new chain has 64 zeros. kind is "intent",
// "outcome" or "event"; intent and code appear on outcomes only. An intent's
// id is "i-<seq>", so the outcome names the record of its intent; in open
// mode an intent that could not be written gets "i-unrecorded-<random>",
// which its outcome then carries. Lines are encoding/json output with HTML
// escaping off; the hash covers the exact bytes written.
//
// # Sharing and rotation
//
// Several processes may append to one log (the servers share one policy
// file, so they share its audit_log): every append takes an exclusive flock
// on FILE.lock beside the log, and a process that finds the file changed
// since its own last write re-reads the last record before chaining to it.
// The in-memory chain head is used otherwise; the file is never re-read per
// record. With MaxBytes set, a record that would grow the file past it
// first renames FILE to FILE.1 (FILE.1 to FILE.2, ... keeping Options.Keep,
// five by default), and the new file's first record continues the chain: its
// prev is the hash of the last record of FILE.1. VerifyFile checks that link
// when the older file is present; VerifyFiles checks a whole set.
//
// # Limits
//
// The chain makes changes evident, not impossible. Anyone with write access
// to the file can rewrite it from the changed line on and recompute every
// hash, and removing whole records from the end leaves a valid shorter
// chain; garbling the end (so that no line from some point on is a record)
// looks like a crash, so Open sets it aside rather than refusing, though
// the sidecar keeps those bytes and the recovered record their hash; Report.Head and Report.LastSeq exist so that the head can be
// anchored elsewhere (copied off the machine) and compared later. The file
// is opened by its path for every record (so a read-only remount or a
// removed file is noticed at once), which means a rename of a directory on
// the path after Open redirects later records; the root check keeps the
// path out of the servers' reach, not out of the operator's. Cross-process
// locking uses flock, which is absent on Windows and some other systems:
// there, one log must have one writing process. Root containment compares
// paths byte-wise, so a case-insensitive file system can hide a match.
package audit
