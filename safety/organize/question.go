package organize

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/bastion-mcp/bastion/safety/approval"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/journal"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// Ask describes moves a person is asked to confirm.
type Ask struct {
	// Action is the tool that asks (apply_plan, move_file, ...).
	Action string
	// Key is the policy key that made the server ask ("approval.apply_plan").
	Key string
	// Title is the fixed sentence naming the operation.
	Title string
	// ID names what the approval covers besides the moves: the plan id,
	// or the journal action an undo takes back; "" when none.
	IDLabel, ID string
	// Moves are the moves the operation would make, as it would make them.
	Moves []journal.Move
	// PerFolder adds a count of the moves into each destination folder.
	PerFolder bool
}

// Question builds the question for a from server-side facts only: the
// moves (shown as escaped data), their count and total size, the count per
// destination folder, and the files the risk radar marks HIGH_RISK. The
// binding is the id and every move's source, destination, identity, kind,
// size and modification time.
func (w Workspace) Question(a Ask) approval.Question {
	q := approval.Question{Action: a.Action, Key: a.Key, Title: a.Title}
	if a.ID != "" {
		q.Facts = append(q.Facts, [2]string{a.IDLabel, a.ID})
	}
	var total int64
	var risky, plain []string
	folders := map[string]int{}
	q.Binding = []string{a.IDLabel + "=" + a.ID}
	for _, m := range a.Moves {
		total += m.State.Size
		parent, _ := jail.Split(m.Dst)
		folders[parent]++
		q.Binding = append(q.Binding, bindingOf(m))
		item := m.Src + " → " + m.Dst
		if why, high := w.highRisk(m); high {
			risky = append(risky, item+" (HIGH_RISK: "+why+")")
			continue
		}
		plain = append(plain, item)
	}
	q.Facts = append(q.Facts, [2]string{"Items to move", strconv.Itoa(len(a.Moves))},
		[2]string{"Total size", fmt.Sprintf("%d bytes", total)},
		[2]string{"HIGH_RISK files (risk radar)", strconv.Itoa(len(risky))})
	if a.PerFolder {
		names := make([]string, 0, len(folders))
		for f := range folders {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			q.Facts = append(q.Facts, [2]string{"Into " + f + "/", strconv.Itoa(folders[f])})
		}
	}
	q.Items = append(risky, plain...)
	return q
}

// bindingOf is one move as an approval covers it.
func bindingOf(m journal.Move) string {
	s := m.State
	return fmt.Sprintf("%q>%q id=%v dir=%t size=%d mtime=%d", m.Src, m.Dst, s.ID, s.Dir, s.Size, s.ModTime.UnixNano())
}

// highRisk reports whether the radar marks the moved object HIGH_RISK,
// where it is or where it would go (rules on names only: no file is
// opened), with the radar's first reason.
func (w Workspace) highRisk(m journal.Move) (string, bool) {
	if w.Radar == nil || w.Radar.Engine == nil {
		return "", false
	}
	for _, rel := range []string{m.Src, m.Dst} {
		d, err := w.Radar.Engine.ClassifyPath(w.Radar.Root, rel, m.State.Dir)
		if err != nil || d.Metadata.Importance != risk.HighRisk {
			continue
		}
		why := "high-risk file"
		if len(d.Metadata.Reasons) > 0 {
			why = d.Metadata.Reasons[0]
		}
		return why, true
	}
	return "", false
}
