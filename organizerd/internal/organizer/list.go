package organizer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
)

// listTool is list_files: the entries of the workspace or a folder in it, with what
// plan_organize would do with each.
func (s *Server) listTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("list_files",
		"List the entries of the workspace, or of one folder inside it: for each, its name, size, kind (file, dir, symlink, special), category, whether plan_organize would move it, and if not, why (code, reason, rule, layer). Never follows symlinks. Changes nothing.",
		mcpkit.Annotations{Title: "List workspace files", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"subdir":{"type":"string","description":"Folder to list, relative to the workspace (or absolute inside it). Omit for the workspace itself."}`+
			`},"additionalProperties":false}`)),
		Handler: mcpkit.Handle("list_files", s.log, s.listFiles)}
}

// Entry is one list_files row.
type Entry struct {
	Name      string         `json:"name"`
	Path      string         `json:"path"`
	Size      int64          `json:"size"`
	Kind      organize.Kind  `json:"kind"`
	Category  string         `json:"category,omitempty"`
	WouldMove bool           `json:"would_move"`
	Skip      *organize.Skip `json:"skip,omitempty"`
}

type listArgs struct {
	Subdir *string `json:"subdir"`
}

func (s *Server) listFiles(_ context.Context, _ mcp.CallToolRequest, a listArgs) result.OperationResult {
	start := time.Now()
	rel := "."
	if a.Subdir != nil && *a.Subdir != "" {
		r, err := s.o.Root.Clean(*a.Subdir)
		if err != nil {
			return result.Fail("list_files", err, nil, start)
		}
		rel = r
	}
	d, err := s.o.Root.OpenDir(rel)
	if err != nil {
		return result.Fail("list_files", err, nil, start)
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return result.Fail("list_files", err, nil, start)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	out := make([]Entry, 0, len(ents))
	truncated := false
	for _, e := range ents {
		if len(out) >= MaxListed*4 {
			truncated = true
			break
		}
		p := jail.Join(rel, e.Name)
		en := Entry{Name: quoteIfBad(e.Name), Path: quoteIfBad(p)}
		f, _ := s.evaluate(d, rel, e)
		en.Kind, en.Category = f.facts.Kind, f.facts.Category
		en.Size = f.size
		if rel != "." && f.skip == nil {
			en.Skip = &organize.Skip{Code: result.NeedsExplicitRequest, Rule: "not-top-level", Layer: organize.Restraint,
				Reason: "plan_organize only organizes the top of the workspace; move it with move_file if the user asks"}
		} else {
			en.Skip = f.skip
		}
		en.WouldMove = en.Skip == nil
		out = append(out, en)
	}
	return result.Success("list_files", fmt.Sprintf("%d entries in %s", len(out), rel),
		map[string]any{"path": rel, "entries": out, "count": len(out), "truncated": truncated}, start)
}

type evaluated struct {
	facts organize.Facts
	skip  *organize.Skip
	size  int64
	state jail.FileState
	dest  string
}

// evaluate applies the full rule set to one entry of d (at rel).
func (s *Server) evaluate(d *jail.Dir, rel string, e jail.Entry) (evaluated, bool) {
	var ev evaluated
	if jail.CheckName(e.Name) != nil {
		ev.facts = organize.Facts{Name: e.Name, Kind: organize.KindOfEntry(e.Type), BadName: true}
		ev.skip = s.o.Rules.Plan(ev.facts)
		return ev, false
	}
	info, err := d.Lstat(e.Name)
	if err != nil {
		ev.facts = organize.Facts{Name: e.Name, Kind: organize.KindOfEntry(e.Type)}
		code, reason := result.Classify(err)
		ev.skip = &organize.Skip{Code: code, Reason: reason, Rule: "unreadable", Layer: organize.Protection}
		return ev, false
	}
	p := jail.Join(rel, e.Name)
	ev.facts = s.o.Rules.FactsFor(p, info, s.o.Radar)
	ev.size, ev.state = info.Size, jail.StateOf(info)
	if ev.facts.Kind == organize.File && ev.facts.Category != "" {
		ev.dest = jail.Join(ev.facts.Category, e.Name)
		if rel != "." {
			ev.dest = jail.Join(jail.Join(rel, ev.facts.Category), e.Name)
		}
		ev.facts.DestOccupied = s.occupied(ev.dest)
	}
	ev.skip = s.o.Rules.Plan(ev.facts)
	return ev, ev.skip == nil
}

// occupied reports whether dest exists or its folder is not a real folder.
func (s *Server) occupied(dest string) bool {
	if _, err := s.o.Root.Lstat(dest); err == nil || result.CodeOf(err) != result.NotFound {
		return true
	}
	parent, _ := jail.Split(dest)
	if i, err := s.o.Root.Lstat(parent); err == nil && !i.IsDir() {
		return true
	}
	return false
}

func quoteIfBad(s string) string {
	if jail.CheckName(s) != nil && s != "." {
		return strconv.Quote(s)
	}
	return s
}
