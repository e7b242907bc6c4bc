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
//   - To keep writing after a torn record. A log whose last line is
//     incomplete (a crash mid-write) or unreadable is broken: Open refuses it
//     in closed mode and asks the operator to run `<server> audit verify FILE`.
//     A write that fails half-way is cut back to the previous record, so a
//     full disk does not leave a torn line behind.
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
// first renames FILE to FILE.1 (FILE.1 to FILE.2, ... keeping five), and the
// new file's first record continues the chain. VerifyFile checks that link
// when the older file is present.
//
// # Limits
//
// The chain makes changes evident, not impossible. Anyone with write access
// to the file can rewrite it from the changed line on and recompute every
// hash, and removing whole records from the end leaves a valid shorter
// chain; Report.Head and Report.LastSeq exist so that the head can be
// anchored elsewhere (copied off the machine) and compared later. The file
// is opened by its path for every record (so a read-only remount or a
// removed file is noticed at once), which means a rename of a directory on
// the path after Open redirects later records; the root check keeps the
// path out of the servers' reach, not out of the operator's. Cross-process
// locking uses flock, which is absent on Windows and some other systems:
// there, one log must have one writing process. Root containment compares
// paths byte-wise, so a case-insensitive file system can hide a match.
package audit
