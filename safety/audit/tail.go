package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxLineBytes bounds how far back the tail reader looks for the start of
// the last line. A longer last line is treated as unreadable.
const maxLineBytes = 64 << 20

// errLineTooLong reports a last line longer than maxLineBytes.
var errLineTooLong = errors.New("audit: the last line is longer than 64 MiB")

// lastLine returns the last line of the first size bytes of r, without its
// newline, and the offset where it starts. complete is false when those
// bytes do not end in a newline (a torn write). size 0 gives an empty,
// complete line at 0.
func lastLine(r io.ReaderAt, size int64) (line []byte, start int64, complete bool, err error) {
	if size == 0 {
		return nil, 0, true, nil
	}
	chunk := int64(4096)
	for {
		from := max(size-chunk, 0)
		buf := make([]byte, size-from)
		if _, err := r.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, false, err
		}
		complete = buf[len(buf)-1] == '\n'
		body := buf
		if complete {
			body = buf[:len(buf)-1]
		}
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			return body[i+1:], from + int64(i) + 1, complete, nil
		}
		if from == 0 {
			return body, 0, complete, nil
		}
		if chunk >= maxLineBytes {
			return nil, 0, complete, errLineTooLong
		}
		chunk *= 4
	}
}

// tailState is what the end of a log file says about the chain.
type tailState struct {
	head head
	// broken is non-empty when the last line is torn or is not a record;
	// head.hash then chains to that line as it is and head.seq is the last
	// readable seq found near the end (best effort).
	broken string
	// partial is true when the file does not end in a newline, so a newline
	// must be written before the next record.
	partial bool
	// file names the broken file when it is not the log itself (an empty
	// log continuing a rotated file whose tail is broken).
	file string
}

// fileOr returns the broken file's name, or def when it is the log itself.
func (st tailState) fileOr(def string) string {
	if st.file != "" {
		return st.file
	}
	return def
}

// head is the chain head: the last record's seq and the hash of its line.
type head struct {
	seq  int64
	hash string
}

// genesis is the head before the first record of a chain.
var genesis = head{seq: 0, hash: GenesisPrev}

// readTail reads the state of the chain from the end of the first size
// bytes of r. For an empty file it returns empty=true and no state: the
// caller decides where an empty file's chain continues from.
func readTail(r io.ReaderAt, size int64) (st tailState, empty bool, err error) {
	if size == 0 {
		return tailState{}, true, nil
	}
	line, start, complete, err := lastLine(r, size)
	if err != nil {
		if errors.Is(err, errLineTooLong) {
			return tailState{head: head{hash: GenesisPrev}, broken: "its last line is longer than 64 MiB", partial: !complete}, false, nil
		}
		return tailState{}, false, err
	}
	st.head.hash = hashLine(line)
	st.partial = !complete
	if !complete {
		st.broken = "it ends in an incomplete record (a write was cut off)"
	} else if rec, why := parseRecord(line); why != "" {
		st.broken = "its last line is not a valid record (" + why + ")"
	} else {
		st.head.seq = rec.Seq
		return st, false, nil
	}
	// Best effort: find the last readable seq among the few lines before.
	for range 16 {
		if start == 0 {
			break
		}
		var prev []byte
		prev, start, _, err = lastLine(r, start)
		if err != nil {
			break
		}
		if rec, why := parseRecord(prev); why == "" {
			st.head.seq = rec.Seq
			break
		}
	}
	return st, false, nil
}

// describeBroken is the operator-facing sentence for a broken tail.
func describeBroken(server, path, why string) string {
	return fmt.Sprintf("the audit log %s is broken: %s; run `%s audit verify %s`, then repair the file or move it aside",
		path, why, server, path)
}
