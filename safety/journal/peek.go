package journal

import "github.com/bastion-mcp/bastion/safety/result"

// ErrNotAsked refuses an undo or redo whose moves are not the ones a person
// was asked about: another action ran while the question was open.
var ErrNotAsked = result.New(result.Stale, "the latest action changed while the person was being asked (another move, undo or redo ran): nothing was moved; call again to ask about what would happen now")

// NextUndo returns, without acting, what Undo would do now: the latest
// action's id and label, with its moves in the order Undo would make them
// (from where each file is now back to where it was). It holds no lock
// after it returns.
func (j *Journal) NextUndo() (Action, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.undo) == 0 {
		return Action{}, ErrNothingToUndo
	}
	a := *j.undo[len(j.undo)-1]
	a.Moves = reverse(a.Moves)
	return a, nil
}

// NextRedo returns, without acting, what Redo would do now.
func (j *Journal) NextRedo() (Action, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.redo) == 0 {
		return Action{}, ErrNothingToRedo
	}
	a := *j.redo[len(j.redo)-1]
	a.Moves = append([]Move(nil), a.Moves...)
	return a, nil
}

// Expect is a Hook that lets an action run only when its moves are exactly
// want (same sources, destinations and file states, in order), and then
// calls next. Undo and Redo with Expect(NextUndo's moves, ...) do what a
// person was asked about, or nothing (ErrNotAsked).
func Expect(want []Move, next Hook) Hook {
	return func(a *Action) error {
		if !SameMoves(a.Moves, want) {
			return ErrNotAsked
		}
		if next == nil {
			return nil
		}
		return next(a)
	}
}

// SameMoves reports whether a and b are the same moves of the same objects.
func SameMoves(a, b []Move) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Src != y.Src || x.Dst != y.Dst || x.State.ID != y.State.ID || x.State.Dir != y.State.Dir ||
			x.State.Size != y.State.Size || !x.State.ModTime.Equal(y.State.ModTime) {
			return false
		}
	}
	return true
}
