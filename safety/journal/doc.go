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
//   - To accept a corrupt journal: a damaged line that is not the last one is
//     a startup error. A torn last line (a crash mid-write) is discarded.
//
// # Format
//
// One JSON object per line. "state" (first line after compaction) holds
// the stacks; "begin" holds an action's id, op (do, undo, redo), the action
// it undoes or redoes, and every move with the source's identity, size and
// mtime; "done" lists the indices of completed moves (batched); "commit"
// closes an action, with "keep" listing the moves that happened when not
// all did.
//
// # Durability and batching
//
// The begin record is fsync'd before the first move: the intention is never
// lost. "done" records are written and fsync'd in batches (every
// Options.BatchMoves moves or Options.BatchInterval, whichever comes first),
// each batch after the changed directories were fsync'd. Losing the last
// batch in a crash costs nothing: recovery never reads "done" to decide
// where a file is; it reads the filesystem, by identity, because a rename is
// atomic and the file is therefore under exactly one of its two names. The
// journal records intent; the filesystem is the source of truth. The commit
// record is written only after every changed directory was fsync'd.
package journal
