package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestCheckNamesEachRefusal runs Check on one bad move per case and wants
// the code and the words that say what changed.
func TestCheckNamesEachRefusal(t *testing.T) {
	for _, c := range []struct {
		name   string
		moves  func(t *testing.T, f *fixture) []Move
		code   result.Code
		reason string
	}{
		{"source gone", func(t *testing.T, f *fixture) []Move {
			m := f.move(t, "a.pdf", "Documents/a.pdf")
			os.Remove(filepath.Join(f.dir, "a.pdf"))
			return []Move{m}
		}, result.Stale, "no longer at a.pdf"},
		{"source now a symlink", func(t *testing.T, f *fixture) []Move {
			m := f.move(t, "a.pdf", "Documents/a.pdf")
			os.Remove(filepath.Join(f.dir, "a.pdf"))
			os.Symlink("b.jpg", filepath.Join(f.dir, "a.pdf"))
			return []Move{m}
		}, result.PathEscape, "now a symbolic link"},
		{"source changed", func(t *testing.T, f *fixture) []Move {
			m := f.move(t, "a.pdf", "Documents/a.pdf")
			os.WriteFile(filepath.Join(f.dir, "a.pdf"), []byte("edited since, and longer"), 0o644)
			return []Move{m}
		}, result.Stale, "changed since"},
		{"folder into itself", func(t *testing.T, f *fixture) []Move {
			return []Move{f.move(t, "dir", "dir/inner")}
		}, result.PolicyDenied, "into itself"},
		{"two moves to one place", func(t *testing.T, f *fixture) []Move {
			return []Move{f.move(t, "a.pdf", "x"), f.move(t, "b.jpg", "x")}
		}, result.PolicyDenied, "two moves target x"},
		{"destination occupied", func(t *testing.T, f *fixture) []Move {
			return []Move{f.move(t, "a.pdf", "b.jpg")}
		}, result.PolicyDenied, "b.jpg is now occupied"},
		{"destination folder is a file", func(t *testing.T, f *fixture) []Move {
			return []Move{f.move(t, "a.pdf", "b.jpg/a.pdf")}
		}, result.PolicyDenied, "is a file, not a folder"},
		{"destination folder is a symlink", func(t *testing.T, f *fixture) []Move {
			os.Symlink("dir", filepath.Join(f.dir, "alias"))
			return []Move{f.move(t, "a.pdf", "alias/a.pdf")}
		}, result.PathEscape, "symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "a.pdf", "b.jpg", "dir/inner.txt")
			j, _ := f.open(t)
			defer j.Close()
			fails := j.Check(c.moves(t, f))
			if len(fails) == 0 {
				t.Fatal("no refusal")
			}
			last := fails[len(fails)-1]
			if last.Code != c.code || !strings.Contains(last.Reason, c.reason) {
				t.Fatalf("refusal %+v, want %s naming %q", last, c.code, c.reason)
			}
		})
	}
}

// TestCommitRecordListsTheMovesThatHappened checks commitOf: all, or keep
// with the indexes done; neither when none was.
func TestCommitRecordListsTheMovesThatHappened(t *testing.T) {
	for _, c := range []struct {
		name string
		done []int
		n    int
		want string
	}{
		{"all", []int{0, 1}, 2, `{"t":"commit","id":7,"all":true}`},
		{"some", []int{1}, 3, `{"t":"commit","id":7,"keep":[1]}`},
		{"none", nil, 2, `{"t":"commit","id":7}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(commitOf(7, c.done, c.n))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Fatalf("%s, want %s", b, c.want)
			}
		})
	}
}

// TestActionCommitsInBatchesAndInOrder applies more moves than one batch
// holds and checks the journal's records: begin, the full done batches,
// commit (which covers the last, partial batch).
func TestActionCommitsInBatchesAndInOrder(t *testing.T) {
	f := newFixture(t, "1.pdf", "2.pdf", "3.pdf", "4.pdf", "5.pdf")
	j, _ := f.open(t) // BatchMoves: 3
	var moves []Move
	for _, n := range []string{"1", "2", "3", "4", "5"} {
		moves = append(moves, f.move(t, n+".pdf", "Documents/"+n+".pdf"))
	}
	j.o.BatchInterval = time.Hour
	if _, err := j.Do("apply_plan", "", moves, nil); err != nil {
		t.Fatal(err)
	}
	j.Close()
	data, err := os.ReadFile(f.jp)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.T == "done" {
			b, _ := json.Marshal(r.I)
			kinds = append(kinds, "done"+string(b))
			continue
		}
		kinds = append(kinds, r.T)
	}
	got := strings.Join(kinds, " ")
	if !strings.HasSuffix(got, "begin done[0,1,2] commit") {
		t.Fatalf("journal records %q", got)
	}
}
