package journal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kinds returns the types of the journal's records, in order.
func kinds(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.T)
	}
	return strings.Join(out, " ")
}

// TestFailedAnnouncementIsAborted: the begin record is written while the
// hook (the audit intent) runs; when the hook fails nothing moves, an
// abort record follows the begin, and a restart recovers nothing, moves
// nothing and keeps the redo stack.
func TestFailedAnnouncementIsAborted(t *testing.T) {
	f := newFixture(t, "a.pdf", "b.pdf")
	j, _ := f.open(t)
	j.Do("move_file", "", []Move{f.move(t, "b.pdf", "c.pdf")}, nil)
	j.Undo(nil)
	refused := errors.New("the audit log is unavailable")
	if _, err := j.Do("move_file", "", []Move{f.move(t, "a.pdf", "Documents/a.pdf")}, func(*Action) error { return refused }); err != refused {
		t.Fatalf("err = %v, want the hook's", err)
	}
	j.Close()
	if got := kinds(t, f.jp); !strings.HasSuffix(got, "begin abort") {
		t.Fatalf("journal records %q, want a begin then an abort", got)
	}
	j, rec := f.open(t)
	defer j.Close()
	if len(rec) != 0 || !f.exists("a.pdf") || f.exists("Documents") {
		t.Fatalf("recovered %+v after an aborted action; a.pdf in place %v", rec, f.exists("a.pdf"))
	}
	if _, r := j.Depth(); r != 1 {
		t.Fatalf("redo depth %d, want 1: a refused action is no new work", r)
	}
}

// TestRecoveryIsAnnouncedBeforeItMoves: Options.Recovering sees each
// interrupted action before recovery moves anything, and when it fails
// Open fails and nothing moves.
func TestRecoveryIsAnnouncedBeforeItMoves(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"announced", nil},
		{"announcement refused", errors.New("the audit log is unavailable")},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "a.pdf")
			b, _ := json.Marshal(&record{T: "begin", ID: 1, Op: opDo, Tool: "move_file", Moves: []Move{f.move(t, "a.pdf", "z.pdf")}})
			os.MkdirAll(filepath.Dir(f.jp), 0o700)
			os.WriteFile(f.jp, append(b, '\n'), 0o600)
			var seen []uint64
			j, rec, err := Open(f.jp, f.root, Options{Recovering: func(a *Action) error {
				if !f.exists("a.pdf") || f.exists("z.pdf") {
					t.Error("recovery moved before it was announced")
				}
				seen = append(seen, a.ID)
				return c.err
			}})
			if len(seen) != 1 || seen[0] != 1 {
				t.Fatalf("announced %v, want action 1", seen)
			}
			if c.err != nil {
				if err != c.err || !f.exists("a.pdf") {
					t.Fatalf("Open = %v, a.pdf in place %v; want the hook's error and nothing moved", err, f.exists("a.pdf"))
				}
				return
			}
			defer j.Close()
			if err != nil || len(rec) != 1 || rec[0].Completed != 1 || !f.exists("z.pdf") {
				t.Fatalf("Open = %v, recovered %+v", err, rec)
			}
		})
	}
}

// TestAnswerBeforeSettleThenClose: Do returns once the move is made; the
// commit record is written by the settle (here at the latest by Close),
// after the begin, and a restart finds nothing to recover.
func TestAnswerBeforeSettleThenClose(t *testing.T) {
	f := newFixture(t, "a.pdf")
	j, _ := f.open(t)
	if _, err := j.Do("move_file", "", []Move{f.move(t, "a.pdf", "Documents/a.pdf")}, nil); err != nil {
		t.Fatal(err)
	}
	if !f.exists("Documents/a.pdf") {
		t.Fatal("Do returned before the move was made")
	}
	j.Close()
	if got := kinds(t, f.jp); !strings.HasSuffix(got, "begin commit") {
		t.Fatalf("journal records %q, want begin then commit", got)
	}
	j, rec := f.open(t)
	defer j.Close()
	if len(rec) != 0 {
		t.Fatalf("recovered %+v from a settled journal", rec)
	}
}
