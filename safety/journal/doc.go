// Package journal is organizerd's write-ahead move journal: every action
// (one applied plan, one move, one undo, one redo) is written and fsync'd as
// an intention before its first move, its completed moves are recorded as
// they happen, and it is committed at the end. The journal also holds the
// undo and redo stacks, so they survive a restart and a crash.
//
// # What it refuses
//
//   - To act on anything that is not what was checked: before an action
//     starts, every source must still be the object recorded (identity, and
//     for a file size and modification time) and every destination must be
//     free; one failure refuses the whole action with per-file reasons and
//     nothing moves.
//   - To overwrite: moves go through jail.Mover (renameat2 RENAME_NOREPLACE).
//   - To undo over something new: an undo whose original location is now
//     occupied, or whose moved file has changed or gone, is refused, naming
//     each file.
//   - To trust its own records over the filesystem: after a crash the
//     interrupted action is resolved by identity. For each planned move it
//     looks at both names: at the destination it is done; still at the source
//     it is completed now (roll forward); under both names (a crash between
//     link and unlink on a filesystem without RENAME_NOREPLACE) the source
//     name is removed; under neither it is dropped from the action. The
//     action is then committed with exactly the moves that happened, so every
//     file sits in one place and the action can be undone.
//   - To run twice on one journal: a second process is refused (flock) where
//     the platform has it.
//   - To accept a journal damaged in the middle: an invalid line with a
//     valid record after it is a startup error (ErrCorrupt, naming the line):
//     no crash leaves that behind. What a crash does leave, a damaged tail
//     (a torn last line, garbage lines, zeros after the last valid record),
//     is copied to a sidecar next to the journal (<journal>.tail-<sha256>),
//     made durable, reported (Journal.Tail; organizerd logs it and audits a
//     journal_tail_set_aside event), and the valid records are kept.
//
// # Format
//
// One JSON object per line. "state" (first line after compaction) holds
// the stacks; "begin" holds an action's id, op (do, undo, redo), the action
// it undoes or redoes, and every move with the source's identity, size and
// mtime; "done" lists the indices of completed moves (batched); "commit"
// closes an action, with "keep" listing the moves that happened when not
// all did; "abort" closes an action whose announcement (the audit intent)
// failed, of which nothing happened.
//
// # Durability and batching
//
// The begin record is fsync'd before the first move: the intention is never
// lost. Its fsync runs while the hook (the audit intent) is written, and
// nothing moves until both have succeeded; a begin record whose hook failed
// is closed by an abort record, and one whose process died first is
// recovered at the next start only after Options.Recovering announced it.
// "done" records are written and fsync'd in batches (every
// Options.BatchMoves moves or Options.BatchInterval, whichever comes first),
// each batch after the changed directories were fsync'd. Losing the last
// batch in a crash costs nothing: recovery never reads "done" to decide
// where a file is; it reads the filesystem, by identity, because a rename is
// atomic and the file is therefore under exactly one of its two names. The
// journal records intent; the filesystem is the source of truth.
//
// # What an answer promises
//
// Do, Undo and Redo return once the begin record is durable and the moves
// are made. The rest of the action, the fsync of every directory it changed
// and then its commit record, settles after that: in the background at
// once, or first thing in the next action, in Close or before a
// compaction. The commit is written only after the directories were
// fsync'd, so a durable commit never describes a rename that a power loss
// could undo. A crash before the settle leaves the begin record without a
// commit, and the next start resolves it by identity: a move found done is
// kept, one a power loss undid is made again (roll forward). So an answer
// holds across any crash. A settle that fails leaves the journal refusing
// actions until restart, which resolves the action from the filesystem.
package journal
