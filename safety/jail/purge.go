package jail

// PurgeTree removes the directory tree at path (an absolute path of the
// caller's own, such as a run's private HOME beneath the state directory,
// not a path inside a jail) whatever modes and depth its contents were
// left with, and reports what it could not remove.
//
// On Linux it works on directory fds only: each entry is removed with
// unlinkat relative to its parent's fd; a directory is opened with
// O_NOFOLLOW, so a symbolic link is removed as a name and never followed;
// a directory on another device or the root of a mount is never entered
// (it stays, and is reported). A directory it cannot list, enter or empty
// because of its mode (0000, 0500, ...) is given mode 0700 first, through
// an fd opened on that very directory (O_PATH|O_NOFOLLOW), which works
// for directories the caller owns (or as root). The walk is iterative: it
// holds at most a fixed number of directory fds whatever the depth
// (deeper directories are re-entered through ".." with their identity
// checked), and it never builds a path longer than the one it was given,
// so trees far deeper than PATH_MAX are removed.
//
// left is what remains: the entries it could not remove (an immutable
// file, a mount, a file owned by another user in a directory it may not
// change, ...) and the directories holding them, with their disk bytes.
// err is nil exactly when nothing remains (a path that does not exist is
// nil, nothing left); otherwise it is an OPERATION_FAILED naming the first
// entry that stayed, relative to path.
//
// Elsewhere (no openat and O_PATH) it gives directories mode 0700 and
// removes the tree with os.RemoveAll, following no symbolic link but
// without the mount and depth guarantees.
func PurgeTree(path string) (left Usage, err error) { return purgeTree(path, false) }

// MeasureTree measures the disk usage of the tree at path, the path
// itself included, the way PurgeTree walks it but changing nothing: no
// symbolic link followed, no other mount entered, any depth with a bounded
// number of fds. A directory it may not list or enter is counted by its
// own size only, in Skipped. A path that does not exist measures zero.
func MeasureTree(path string) (Usage, error) { return purgeTree(path, true) }
