package audit

import (
	"bufio"
	"encoding/json"
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
	// Torn is true when the break is a torn tail, not a change in the
	// middle: no complete line from BrokenAt on is a record, so the file
	// ends in what a cut-off write leaves (a last line without its newline)
	// or in garbage after its last record, and the chain before it is
	// whole. Open sets such a tail aside and records a recovery; any other
	// break makes Open refuse the log.
	Torn bool
	// ValidBytes is the length of the intact part of the file: every byte
	// up to and including the newline of the last intact record.
	ValidBytes int64
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
	// Recoveries are the intact "recovered" records: torn tails that a
	// server set aside, in the order written.
	Recoveries []Recovery
}

// ActionRecovered is the action of the event record Open writes after it
// sets a torn tail aside.
const ActionRecovered = "recovered"

// Recovery is what one "recovered" record says about a torn tail.
type Recovery struct {
	// Line and Seq locate the recovered record itself.
	Line int
	Seq  int64
	// Sidecar is the name of the file, in the log's directory, that holds
	// the bytes set aside; Bytes and SHA256 are their length and hash.
	Sidecar string `json:"sidecar"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
	// Reason is what was wrong with the tail.
	Reason string `json:"reason"`
}

// Verify reads a log from r and reports its first broken link: a line that
// is not a well-formed record (including a last line without a newline,
// which is a torn write), a seq that does not follow the one before it, or
// a prev that is not the SHA-256 of the line before it. When the break is
// a torn tail, Report.Torn says so.
//
// The first record is the anchor: if its prev is GenesisPrev its seq must be
// 1; any other prev marks a file that continues a rotated one, which
// VerifyFile can check and Verify cannot. The error is only for failures to
// read r; a broken chain is a Report with OK false.
func Verify(r io.Reader) (Report, error) {
	v := verifier{br: bufio.NewReaderSize(r, 64<<10), rep: Report{OK: true}}
	for {
		raw, err := v.br.ReadBytes('\n')
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			return v.rep, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return v.rep, err
		}
		v.line++
		if err != nil { // data without a newline at the end
			rep := v.rep.broken(v.line, "the last line has no newline: the log ends in an incomplete record (a write was cut off)")
			rep.Torn = true
			return rep, nil
		}
		why, unreadable := v.next(raw[:len(raw)-1])
		if why == "" {
			v.rep.ValidBytes += int64(len(raw))
			continue
		}
		rep := v.rep.broken(v.line, why)
		if unreadable {
			rep.Torn, err = noRecordIn(v.br)
		}
		return rep, err
	}
}

// verifier is Verify's state between lines.
type verifier struct {
	br       *bufio.Reader
	rep      Report
	line     int
	prevHash string
}

// next checks one line (without its newline) against the chain so far and
// adds it to the report. It returns why the line breaks the chain, and
// whether the line is not a record at all (rather than a record that does
// not link).
func (v *verifier) next(line []byte) (why string, unreadable bool) {
	rec, why := parseRecord(line)
	if why != "" {
		return why, true
	}
	if v.line == 1 {
		if (rec.Prev == GenesisPrev) != (rec.Seq == 1) {
			return fmt.Sprintf("the first record has seq %d and prev %s…: only seq 1 may start a chain, and it must",
				rec.Seq, rec.Prev[:12]), false
		}
		v.rep.FirstSeq, v.rep.FirstPrev = rec.Seq, rec.Prev
	} else {
		if rec.Seq != v.rep.LastSeq+1 {
			return fmt.Sprintf("seq %d does not follow seq %d on line %d (a record was removed, inserted or moved)",
				rec.Seq, v.rep.LastSeq, v.line-1), false
		}
		if rec.Prev != v.prevHash {
			return fmt.Sprintf("prev does not match the hash of line %d (that line was edited, or records were removed or reordered)",
				v.line-1), false
		}
	}
	if rec.Kind == KindEvent && rec.Action == ActionRecovered {
		v.rep.Recoveries = append(v.rep.Recoveries, recoveryOf(line, v.line, rec.Seq))
	}
	v.prevHash = hashLine(line)
	v.rep.Records++
	v.rep.LastSeq, v.rep.Head = rec.Seq, v.prevHash
	return "", false
}

// recoveryOf reads the fields of a recovered record; a field of the wrong
// type is left at its zero value (the record itself is intact).
func recoveryOf(line []byte, lineNo int, seq int64) Recovery {
	var w struct {
		Fields Recovery `json:"fields"`
	}
	_ = json.Unmarshal(line, &w)
	rc := w.Fields
	rc.Line, rc.Seq = lineNo, seq
	return rc
}

// noRecordIn reads the rest of br and reports whether no complete line in
// it is a well-formed record: what follows a torn tail is more of it, but
// a record after a bad line means the line was changed in place.
func noRecordIn(br *bufio.Reader) (bool, error) {
	for {
		raw, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if _, why := parseRecord(raw[:len(raw)-1]); why == "" {
			return false, nil
		}
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
