package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
)

// Report is the result of verifying a log.
type Report struct {
	// Records is the number of intact records before the first broken
	// link: every record when OK.
	Records int
	// OK is true when every line is a record and every link holds.
	OK bool
	// BrokenAt is the 1-based line of the first broken link, 0 when OK.
	BrokenAt int
	// Reason says what is wrong at BrokenAt, empty when OK.
	Reason string
	// FirstSeq and FirstPrev are the seq and prev of the first record.
	// FirstPrev is GenesisPrev when the file starts a chain; otherwise the
	// file continues one from a rotated predecessor.
	FirstSeq  int64
	FirstPrev string
	// LastSeq and Head are the seq and line hash of the last intact record:
	// the chain head, worth copying elsewhere to detect a later truncation.
	LastSeq int64
	Head    string
	// Note says what VerifyFile could not check (a missing predecessor).
	Note string
}

// Verify reads a log from r and reports its first broken link: a line that
// is not a well-formed record (including a last line without a newline,
// which is a torn write), a seq that does not follow the one before it, or
// a prev that is not the SHA-256 of the line before it.
//
// The first record is the anchor: if its prev is GenesisPrev its seq must be
// 1; any other prev marks a file that continues a rotated one, which
// VerifyFile can check and Verify cannot. The error is only for failures to
// read r; a broken chain is a Report with OK false.
func Verify(r io.Reader) (Report, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	rep := Report{OK: true}
	var prevHash string
	for lineNo := 1; ; lineNo++ {
		raw, err := br.ReadBytes('\n')
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			return rep, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return rep, err
		}
		if err != nil { // data without a newline at the end
			return rep.broken(lineNo, "the last line has no newline: the log ends in an incomplete record (a write was cut off)"), nil
		}
		line := raw[:len(raw)-1]
		rec, why := parseRecord(line)
		if why != "" {
			return rep.broken(lineNo, why), nil
		}
		if lineNo == 1 {
			if (rec.Prev == GenesisPrev) != (rec.Seq == 1) {
				return rep.broken(lineNo, fmt.Sprintf(
					"the first record has seq %d and prev %s…: only seq 1 may start a chain, and it must", rec.Seq, rec.Prev[:12])), nil
			}
			rep.FirstSeq, rep.FirstPrev = rec.Seq, rec.Prev
		} else {
			if rec.Seq != rep.LastSeq+1 {
				return rep.broken(lineNo, fmt.Sprintf(
					"seq %d does not follow seq %d on line %d (a record was removed, inserted or moved)",
					rec.Seq, rep.LastSeq, lineNo-1)), nil
			}
			if rec.Prev != prevHash {
				return rep.broken(lineNo, fmt.Sprintf(
					"prev does not match the hash of line %d (that line was edited, or records were removed or reordered)",
					lineNo-1)), nil
			}
		}
		prevHash = hashLine(line)
		rep.Records++
		rep.LastSeq, rep.Head = rec.Seq, prevHash
	}
}

func (r Report) broken(line int, reason string) Report {
	r.OK, r.BrokenAt, r.Reason = false, line, reason
	return r
}

// VerifyFile verifies the log file at path as Verify does. When the file's
// first record continues a chain, it also checks the link to the rotated
// file before it (FILE.1 for FILE, FILE.N+1 for FILE.N): that file's last
// record must have the seq just before and the hash named in prev. A
// missing predecessor (rotation keeps five) is stated in Report.Note, not
// counted as a break.
func VerifyFile(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	rep, err := Verify(f)
	if err != nil || !rep.OK || rep.Records == 0 || rep.FirstPrev == GenesisPrev {
		return rep, err
	}
	pred := predecessorOf(path)
	pf, err := os.Open(pred)
	if errors.Is(err, fs.ErrNotExist) {
		rep.Note = fmt.Sprintf("the first record (seq %d) continues the chain of %s, which is not present, so that link was not checked",
			rep.FirstSeq, pred)
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	defer pf.Close()
	fi, err := pf.Stat()
	if err != nil {
		return rep, err
	}
	st, empty, err := readTail(pf, fi.Size())
	switch {
	case err != nil:
		return rep, err
	case empty:
		rep.Note = fmt.Sprintf("the first record (seq %d) continues the chain of %s, which is empty, so that link was not checked",
			rep.FirstSeq, pred)
	case st.broken != "":
		rep.Note = fmt.Sprintf("the first record (seq %d) continues the chain of %s, but %s, so that link was not checked",
			rep.FirstSeq, pred, st.broken)
	case st.head.hash != rep.FirstPrev:
		rep.Records, rep.LastSeq, rep.Head = 0, 0, ""
		return rep.broken(1, fmt.Sprintf(
			"prev does not match the hash of the last record of %s (the files do not belong together, or one was edited or cut)",
			pred)), nil
	case st.head.seq+1 != rep.FirstSeq:
		rep.Records, rep.LastSeq, rep.Head = 0, 0, ""
		return rep.broken(1, fmt.Sprintf("seq %d does not follow seq %d, the last record of %s",
			rep.FirstSeq, st.head.seq, pred)), nil
	}
	return rep, nil
}

var rotatedSuffix = regexp.MustCompile(`^(.*)\.([1-9][0-9]{0,8})$`)

// predecessorOf names the rotated file that holds the records before path:
// FILE.N+1 for FILE.N, FILE.1 for FILE. A log whose own name ends in ".N"
// is read as a rotated file.
func predecessorOf(path string) string {
	if m := rotatedSuffix.FindStringSubmatch(path); m != nil {
		n, _ := strconv.Atoi(m[2])
		return m[1] + "." + strconv.Itoa(n+1)
	}
	return path + ".1"
}
