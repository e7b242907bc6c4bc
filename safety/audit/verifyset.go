package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// FileReport is one file of a set that VerifyFiles checked.
type FileReport struct {
	Path string
	Report
}

// VerifyFiles verifies a set of files that hold one chain, such as a log
// and its rotated files (FILE FILE.1 FILE.2 ...), given in any order. Each
// file is verified as Verify does; the files with records are then put in
// chain order by their first seq, and each one's first record must
// continue the last record of the one before (seq one more, prev its
// hash). A break in the link is reported on the later file, at line 1.
// The reports come back in chain order, empty files last; ok is true when
// every file and every link is intact. A file that ends in a torn tail is
// not intact here; the last file may end in one, which its server sets
// aside when it next opens the log.
func VerifyFiles(paths []string) (reps []FileReport, ok bool, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, false, err
		}
		rep, err := Verify(f)
		f.Close()
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", p, err)
		}
		reps = append(reps, FileReport{Path: p, Report: rep})
	}
	sort.SliceStable(reps, func(i, j int) bool {
		a, b := reps[i].Records > 0, reps[j].Records > 0
		if a != b {
			return a
		}
		return reps[i].FirstSeq < reps[j].FirstSeq
	})
	ok = true
	for i := range reps {
		if i > 0 && reps[i].Records > 0 && reps[i-1].Records > 0 {
			linkFiles(&reps[i-1], &reps[i])
		}
		ok = ok && reps[i].OK
	}
	return reps, ok, nil
}

// linkFiles checks that next's first record continues prev's last.
func linkFiles(prev, next *FileReport) {
	var why string
	switch {
	case !prev.OK:
		next.Note = "the link to " + prev.Path + " was not checked: that file is broken"
		return
	case next.FirstSeq != prev.LastSeq+1:
		why = fmt.Sprintf("seq %d does not follow seq %d, the last record of %s (a file of the set is missing, or records were removed)",
			next.FirstSeq, prev.LastSeq, prev.Path)
	case next.FirstPrev != prev.Head:
		why = "prev does not match the hash of the last record of " + prev.Path +
			" (the files do not belong together, or one was edited or cut)"
	default:
		return
	}
	next.Report = Report{FirstSeq: next.FirstSeq, FirstPrev: next.FirstPrev}.broken(1, why)
}

// sidecarState says whether the sidecar a recovery names is still beside
// the log at dir and holds what was set aside.
func sidecarState(dir string, rc Recovery) string {
	if rc.Sidecar == "" || rc.Sidecar != filepath.Base(rc.Sidecar) {
		return "the record names no sidecar file"
	}
	f, err := os.Open(filepath.Join(dir, rc.Sidecar))
	if errors.Is(err, fs.ErrNotExist) {
		return "the sidecar is no longer there"
	}
	if err != nil {
		return "the sidecar cannot be read: " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "the sidecar cannot be read: " + err.Error()
	}
	if n != rc.Bytes || hex.EncodeToString(h.Sum(nil)) != rc.SHA256 {
		return "the sidecar differs from what was set aside"
	}
	return "the sidecar is there and matches"
}
