package journal

import (
	"errors"
	"testing"
)

// TestNextUndoIsWhatUndoDoes: NextUndo and NextRedo show the moves Undo and
// Redo then make, and Expect runs them only while they are still those.
func TestNextUndoIsWhatUndoDoes(t *testing.T) {
	f := newFixture(t, "a.pdf", "c.txt")
	j, _ := f.open(t)
	defer j.Close()
	if _, err := j.NextUndo(); err != ErrNothingToUndo {
		t.Fatalf("NextUndo of an empty journal: %v", err)
	}
	if _, err := j.Do("move_file", "", []Move{f.move(t, "a.pdf", "x.pdf")}, nil); err != nil {
		t.Fatal(err)
	}
	next, err := j.NextUndo()
	if err != nil || len(next.Moves) != 1 || next.Moves[0].Src != "x.pdf" || next.Moves[0].Dst != "a.pdf" {
		t.Fatalf("NextUndo: %+v %v", next, err)
	}
	// Another action runs meanwhile: the undo asked about is not the one Undo would do.
	if _, err := j.Do("move_file", "", []Move{f.move(t, "c.txt", "d.txt")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Undo(Expect(next.Moves, nil)); !errors.Is(err, ErrNotAsked) || !f.exists("d.txt") {
		t.Fatalf("an undo of another action: %v", err)
	}
	now, _ := j.NextUndo()
	if _, err := j.Undo(Expect(now.Moves, nil)); err != nil || !f.exists("c.txt") {
		t.Fatalf("the undo asked about: %v", err)
	}
	redo, err := j.NextRedo()
	if err != nil || len(redo.Moves) != 1 || redo.Moves[0].Src != "c.txt" || redo.Moves[0].Dst != "d.txt" {
		t.Fatalf("NextRedo: %+v %v", redo, err)
	}
	if _, err := j.Redo(Expect(redo.Moves, nil)); err != nil || !f.exists("d.txt") {
		t.Fatalf("the redo asked about: %v", err)
	}
}

func TestSameMoves(t *testing.T) {
	f := newFixture(t, "a.pdf", "b.pdf")
	a, b := f.move(t, "a.pdf", "x.pdf"), f.move(t, "b.pdf", "y.pdf")
	changed := a
	changed.State.Size++
	for _, c := range []struct {
		name string
		x, y []Move
		same bool
	}{
		{"identical", []Move{a, b}, []Move{a, b}, true},
		{"another order", []Move{a, b}, []Move{b, a}, false},
		{"one fewer", []Move{a, b}, []Move{a}, false},
		{"another size", []Move{a}, []Move{changed}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if SameMoves(c.x, c.y) != c.same {
				t.Fatalf("SameMoves = %v, want %v", !c.same, c.same)
			}
		})
	}
}
