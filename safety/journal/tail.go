package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bastion-mcp/bastion/safety/internal/fsx"
)

// Tail is a damaged end of the journal that Open set aside: the bytes after
// the last valid record (a torn last line, garbage lines, zeros a crash
// left behind). They are copied to Sidecar, next to the journal, and made
// durable there before the journal is rewritten without them.
type Tail struct {
	// Sidecar is the file holding the bytes set aside, named after their
	// SHA-256 (<journal>.tail-<sha256>), so a start that is interrupted and
	// runs again sets the same bytes aside once.
	Sidecar string `json:"sidecar"`
	// Offset is where the tail began: the journal's bytes kept.
	Offset int64 `json:"offset"`
	// Bytes is the tail's length.
	Bytes int64 `json:"bytes"`
	// SHA256 is the hex SHA-256 of the tail.
	SHA256 string `json:"sha256"`
	// Lines is how many non-blank lines the tail held (a torn last line is one).
	Lines int `json:"lines"`
}

// Tail returns what Open set aside, or nil when the journal ended in a
// whole record.
func (j *Journal) Tail() *Tail {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.tail == nil {
		return nil
	}
	t := *j.tail
	return &t
}

// decode splits a journal's bytes into its valid records and the offset at
// which its damaged tail begins (len(data) when there is none). A line
// that is not a valid record followed by one that is, is damage in the
// middle, which no crash leaves behind: ErrCorrupt, naming the line.
func decode(data []byte) (recs []*record, keep int, err error) {
	bad := 0 // the first invalid line since the last valid record (1-based)
	for n, start := 1, 0; start < len(data); n++ {
		end := len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end = start + i + 1
		}
		line := data[start:end]
		start = end
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, ok := parseRecord(line)
		if !ok {
			if bad == 0 {
				bad = n
			}
			continue
		}
		if bad != 0 {
			return nil, 0, ErrCorrupt.With(fmt.Sprintf("the journal is damaged in the middle: line %d is not a record, and valid records follow it (a crash only damages the end); move the journal aside to start fresh, the files themselves are untouched", bad), nil)
		}
		recs, keep = append(recs, r), end
	}
	return recs, keep, nil
}

// parseRecord decodes one line and reports whether it is a record this
// journal writes: a known type with the fields that type needs.
func parseRecord(line []byte) (*record, bool) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, false
	}
	switch r.T {
	case "state":
		for _, a := range append(append([]*Action(nil), r.Undo...), r.Redo...) {
			if a == nil {
				return nil, false
			}
		}
		return &r, true
	case "begin":
		ok := r.ID != 0 && len(r.Moves) > 0 && (r.Op == opDo || ((r.Op == opUndo || r.Op == opRedo) && r.Of != 0))
		return &r, ok
	case "done", "commit", "abort":
		return &r, r.ID != 0
	}
	return nil, false
}

// setAside copies tail (which began at offset keep) to its sidecar next to
// the journal and makes it durable: a temporary file, fsync, a hard link
// to the sidecar's name (which never replaces a file: an existing sidecar
// of the same name holds the same bytes), and an fsync of the directory.
func (j *Journal) setAside(tail []byte, keep int) error {
	sum := sha256.Sum256(tail)
	t := &Tail{Offset: int64(keep), Bytes: int64(len(tail)), SHA256: hex.EncodeToString(sum[:])}
	t.Sidecar = j.path + ".tail-" + t.SHA256
	for _, l := range bytes.Split(tail, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			t.Lines++
		}
	}
	dir := filepath.Dir(j.path)
	tmp, err := os.CreateTemp(dir, ".organizerd-journal-tail-*")
	if err != nil {
		return ErrWrite.With("the journal's damaged tail could not be set aside (its directory is not writable)", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(tail)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = os.Link(tmp.Name(), t.Sidecar); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err == nil {
		err = fsx.SyncDir(dir)
	}
	if err != nil {
		return ErrWrite.With("the journal's damaged tail could not be set aside", err)
	}
	j.tail = t
	j.log.Warn("journal: set aside a damaged tail (the end of the file after the last valid record); the valid records are kept",
		"journal", j.path, "sidecar", t.Sidecar, "offset", t.Offset, "bytes", t.Bytes, "lines", t.Lines, "sha256", t.SHA256)
	return nil
}
