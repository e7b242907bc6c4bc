package mcpkit

import (
	"context"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/risk"
)

// MaxResourceLinks caps the resource_link items of one tool answer: the
// first MaxResourceLinks HIGH_RISK paths it names, in the order the tool
// named them, each once.
const MaxResourceLinks = 10

// linksKey holds, for one tool call made through Handle, the HIGH_RISK
// paths its answer names.
type linksKey struct{}

type links struct {
	mu    sync.Mutex
	seen  map[string]bool
	items []mcp.ResourceLink
}

// LinkRisk declares that the answer of the tool call running in ctx names
// the path d describes. When d is HIGH_RISK, the answer (built by Handle)
// carries, after its OperationResult text, a resource_link content item
// pointing at d's file-context:// URI: name (the path), mimeType (when
// known) and a description giving the importance, the first reason and the
// suggested action. Other importances, an invalid URI, a URI already
// linked, links beyond MaxResourceLinks and a ctx that is not a tool call
// made through Handle are ignored. It is safe for concurrent use.
//
// d's URI is relative to the server's first root, or absolute inside one,
// like every URI the file-context resource template answers.
func LinkRisk(ctx context.Context, d risk.Descriptor) {
	if d.Metadata.Importance != risk.HighRisk {
		return
	}
	l, ok := ctx.Value(linksKey{}).(*links)
	if !ok {
		return
	}
	name, ok := risk.PathOfURI(d.URI)
	if !ok {
		return
	}
	desc := string(risk.HighRisk)
	if len(d.Metadata.Reasons) > 0 {
		desc += ": " + d.Metadata.Reasons[0]
	}
	if d.Metadata.SuggestedAction != "" {
		desc += " (suggested action: " + string(d.Metadata.SuggestedAction) + ")"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[d.URI] || len(l.items) >= MaxResourceLinks {
		return
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[d.URI] = true
	l.items = append(l.items, mcp.NewResourceLink(d.URI, name, desc, d.MimeType))
}

// linkSummary declares to LinkRisk the HIGH_RISK files and areas of s, a
// summary of a tree in the root at rootPath; first reports whether that
// root is the server's first, whose paths have relative URIs (the others'
// are absolute). Groups of loose files (kind "files") name a rule's
// pattern, not a path, and are not linked.
func linkSummary(ctx context.Context, first bool, rootPath string, s *risk.Summary) {
	for _, it := range s.HighRisk {
		if it.Kind == "files" {
			continue
		}
		p := strings.TrimSuffix(it.Path, "/")
		if !first {
			p = path.Join(filepath.ToSlash(rootPath), p)
		}
		mime := ""
		if it.Kind == "dir" {
			mime = "inode/directory"
		}
		LinkRisk(ctx, risk.Descriptor{URI: risk.URIFor(p), MimeType: mime, Metadata: risk.Metadata{Importance: risk.HighRisk,
			Reasons: []string{it.Reason}, SuggestedAction: it.SuggestedAction}})
	}
}

// withLinks returns ctx carrying a fresh link collector, and the collector.
func withLinks(ctx context.Context) (context.Context, *links) {
	l := &links{}
	return context.WithValue(ctx, linksKey{}, l), l
}

// appendLinks adds l's resource_link items after res's OperationResult
// text content.
func appendLinks(res *mcp.CallToolResult, l *links) *mcp.CallToolResult {
	if l == nil {
		return res
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range l.items {
		res.Content = append(res.Content, it)
	}
	return res
}
