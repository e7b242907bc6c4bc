package organizer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit"
	"github.com/bastion-mcp/bastion/safety/organize"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// listTool is list_files: the entries of the workspace or a folder in it, with what
// plan_organize would do with each.
func (s *Server) listTool() server.ServerTool {
	return server.ServerTool{Tool: mcpkit.NewTool("list_files",
		"List the entries of the workspace, or of one folder inside it: for each, its name, size, kind (file, dir, symlink, special), category, whether plan_organize would move it, and if not, why (code, reason, rule, layer). Each entry also carries the risk radar's verdict on its name: importance (HIGH_RISK, HIGH_VALUE, NORMAL or IGNORABLE) and suggested_action; the first 10 HIGH_RISK entries also come as resource_link items to their file-context:// descriptors. Never follows symlinks. Changes nothing.",
		mcpkit.Annotations{Title: "List workspace files", ReadOnly: true, Idempotent: true},
		json.RawMessage(`{"type":"object","properties":{`+
			`"subdir":{"type":"string","description":"Folder to list, relative to the workspace (or absolute inside it). Omit for the workspace itself."}`+
			`},"additionalProperties":false}`)),
		Handler: mcpkit.Handle("list_files", s.log, s.listFiles)}
}

// Entry is one list_files row.
type Entry struct {
	Name     string        `json:"name"`
	Path     string        `json:"path"`
	Size     int64         `json:"size"`
	Kind     organize.Kind `json:"kind"`
	Category string        `json:"category,omitempty"`
	// Importance and SuggestedAction are the risk radar's verdict on the
	// entry by its name (rules only, no content read); absent without a
	// radar, and for symlinks and special files.
	Importance      string         `json:"importance,omitempty"`
	SuggestedAction string         `json:"suggested_action,omitempty"`
	WouldMove       bool           `json:"would_move"`
	Skip            *organize.Skip `json:"skip,omitempty"`
}

type listArgs struct {
	Subdir *string `json:"subdir"`
}

func (s *Server) listFiles(ctx context.Context, _ mcp.CallToolRequest, a listArgs) result.OperationResult {
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
		en := Entry{Name: quoteIfBad(e.Name), Path: quotePathIfBad(p)}
		ev := s.ws.Listed(d, rel, e)
		en.Kind, en.Category, en.Size, en.Skip = ev.Facts.Kind, ev.Facts.Category, ev.Size, ev.Skip
		en.WouldMove = en.Skip == nil
		en.Importance, en.SuggestedAction = ev.Facts.Risk, ev.Facts.RiskAction
		linkRisk(ctx, p, ev.Facts)
		out = append(out, en)
	}
	return result.Success("list_files", fmt.Sprintf("%d entries in %s", len(out), rel),
		map[string]any{"path": rel, "entries": out, "count": len(out), "truncated": truncated}, start)
}

// linkRisk declares a HIGH_RISK entry at rel to mcpkit, which adds a
// resource_link to its descriptor after the answer's text.
func linkRisk(ctx context.Context, rel string, f organize.Facts) {
	if f.Risk != string(risk.HighRisk) {
		return
	}
	md := risk.Metadata{Importance: risk.HighRisk, SuggestedAction: risk.Action(f.RiskAction)}
	if f.RiskReason != "" {
		md.Reasons = []string{f.RiskReason}
	}
	mcpkit.LinkRisk(ctx, risk.Descriptor{URI: risk.URIFor(rel), MimeType: f.RiskMIME, Metadata: md})
}

// quotePathIfBad quotes a slash-separated path when one of its names is
// one jail refuses (control characters, invalid UTF-8).
func quotePathIfBad(p string) string {
	for _, n := range strings.Split(p, "/") {
		if quoteIfBad(n) != n {
			return strconv.Quote(p)
		}
	}
	return p
}

func quoteIfBad(s string) string {
	if jail.CheckName(s) != nil && s != "." {
		return strconv.Quote(s)
	}
	return s
}
