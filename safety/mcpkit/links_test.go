package mcpkit

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/risk"
)

func linkedDescriptor(rel string, imp risk.Importance) risk.Descriptor {
	return risk.Descriptor{URI: risk.URIFor(rel), MimeType: "text/plain", Metadata: risk.Metadata{Importance: imp,
		Reasons: []string{"environment file: usually holds secrets"}, SuggestedAction: "ASK_BEFORE_MODIFY"}}
}

func TestHandleAddsResourceLinksForHighRiskPaths(t *testing.T) {
	s := NewServer("links-test", "0", "test server")
	s.AddTool(NewTool("name", "Name paths.", Annotations{ReadOnly: true, Idempotent: true}, echoSchema),
		Handle("name", nil, func(ctx context.Context, _ mcp.CallToolRequest, a echoArgs) result.OperationResult {
			for i := 0; i < a.Depth; i++ {
				LinkRisk(ctx, linkedDescriptor(fmt.Sprintf("dir %d/.env", i), risk.HighRisk))
				LinkRisk(ctx, linkedDescriptor("dir 0/.env", risk.HighRisk))
				LinkRisk(ctx, linkedDescriptor(fmt.Sprintf("src/main%d.go", i), risk.Normal))
				LinkRisk(ctx, risk.Descriptor{URI: "file-context://../x", Metadata: risk.Metadata{Importance: risk.HighRisk}})
			}
			if a.Path == "refuse" {
				return result.With("name", result.PolicyDenied, "refused", nil, time.Time{})
			}
			return result.Success("", "named", a, time.Time{})
		}))
	c := mcpkittest.StartInProcess(t, s)
	for _, tc := range []struct {
		name  string
		args  map[string]any
		links int
	}{
		{"none", map[string]any{"depth": 0}, 0},
		{"three", map[string]any{"depth": 3}, 3},
		{"capped", map[string]any{"depth": 25}, MaxResourceLinks},
		{"refusal-keeps-links", map[string]any{"depth": 2, "path": "refuse"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req mcp.CallToolRequest
			req.Params.Name, req.Params.Arguments = "name", tc.args
			res, err := c.CallTool(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.Content[0].(mcp.TextContent); !ok {
				t.Fatalf("content[0] is %T, want the OperationResult text", res.Content[0])
			}
			r := mcpkittest.Parse(t, res)
			if len(r.Links) != tc.links || len(res.Content) != 1+tc.links {
				t.Fatalf("%d links (%d items), want %d", len(r.Links), len(res.Content), tc.links)
			}
			for i, l := range r.Links {
				want := fmt.Sprintf("dir %d/.env", i)
				if l.Name != want || l.URI != risk.URIFor(want) || l.MIMEType != "text/plain" ||
					l.Description != "HIGH_RISK: environment file: usually holds secrets (suggested action: ASK_BEFORE_MODIFY)" {
					t.Errorf("link %d = %+v, want %s", i, l, want)
				}
			}
		})
	}
}

func TestLinkRiskOutsideHandleIsIgnored(t *testing.T) {
	LinkRisk(context.Background(), linkedDescriptor(".env", risk.HighRisk)) // must not panic
}

func TestMaxResourceLinksAgree(t *testing.T) {
	if MaxResourceLinks != mcpkittest.MaxResourceLinks {
		t.Fatalf("mcpkit.MaxResourceLinks %d, mcpkittest.MaxResourceLinks %d", MaxResourceLinks, mcpkittest.MaxResourceLinks)
	}
}

// failRecorder records a Fatalf instead of stopping the test.
type failRecorder struct {
	testing.TB
	msg string
}

func (f *failRecorder) Helper() {}
func (f *failRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestParseChecksResourceLinks(t *testing.T) {
	text := mcp.TextContent{Type: "text", Text: `{"ok":true,"code":"OK","action":"a","reason":"r","detail":{},"duration_ms":0}`}
	good := mcp.NewResourceLink(risk.URIFor("a b/.env"), "a b/.env", "HIGH_RISK: secrets", "text/plain")
	many := []mcp.Content{text}
	for i := 0; i <= MaxResourceLinks; i++ {
		p := fmt.Sprintf("d%d/.env", i)
		many = append(many, mcp.NewResourceLink(risk.URIFor(p), p, "HIGH_RISK", ""))
	}
	for _, tc := range []struct {
		name    string
		content []mcp.Content
		want    string // "" when Parse accepts
	}{
		{"text-only", []mcp.Content{text}, ""},
		{"text-then-link", []mcp.Content{text, good}, ""},
		{"no-content", nil, "got none"},
		{"link-first", []mcp.Content{good, text}, "want text"},
		{"two-texts", []mcp.Content{text, text}, "only resource_link"},
		{"bad-uri", []mcp.Content{text, mcp.NewResourceLink("file-context://a/../b", "a/../b", "HIGH_RISK", "")}, "not a valid file-context URI"},
		{"other-scheme", []mcp.Content{text, mcp.NewResourceLink("file:///etc/passwd", "/etc/passwd", "HIGH_RISK", "")}, "not a valid file-context URI"},
		{"wrong-name", []mcp.Content{text, mcp.NewResourceLink(risk.URIFor(".env"), "x", "HIGH_RISK", "")}, "want its path"},
		{"no-importance", []mcp.Content{text, mcp.NewResourceLink(risk.URIFor(".env"), ".env", "secrets", "")}, "importance"},
		{"twice", []mcp.Content{text, good, good}, "twice"},
		{"over-cap", many, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &failRecorder{TB: t}
			func() {
				defer func() {
					if p := recover(); p != nil && p != rec {
						panic(p)
					}
				}()
				mcpkittest.Parse(rec, &mcp.CallToolResult{Content: tc.content,
					StructuredContent: map[string]any{"ok": true, "code": "OK", "action": "a", "reason": "r", "detail": map[string]any{}, "duration_ms": 0}})
			}()
			if tc.want == "" && rec.msg != "" || tc.want != "" && !strings.Contains(rec.msg, tc.want) {
				t.Fatalf("Parse said %q, want %q", rec.msg, tc.want)
			}
		})
	}
}

// TestContextSummaryLinksHighRiskFiles: get_context_summary links each
// HIGH_RISK file it lists, with relative URIs in the first root and
// absolute ones in the others, and only those of the tree asked for.
func TestContextSummaryLinksHighRiskFiles(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a, ".env", "A=1\n")
	writeFile(t, a, "deploy/server.pem", "x\n")
	writeFile(t, a, "src/index.js", "x\n")
	writeFile(t, b, ".env", "B=1\n")
	c := radarServer(t, &bytes.Buffer{}, a, b)
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"every-root", map[string]any{}, []string{".env", "deploy/server.pem", filepath.ToSlash(b) + "/.env"}},
		{"sub-path", map[string]any{"path": filepath.Join(a, "deploy")}, []string{"deploy/server.pem"}}, // several roots: absolute
		{"second-root", map[string]any{"path": b}, []string{filepath.ToSlash(b) + "/.env"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, c, "get_context_summary", tc.args)
			wantCode(t, r, result.OK)
			var got []string
			for _, l := range r.Links {
				got = append(got, l.Name)
				if l.URI != risk.URIFor(l.Name) {
					t.Errorf("link %s has URI %s", l.Name, l.URI)
				}
			}
			sort.Strings(got)
			sort.Strings(tc.want)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("links %v, want %v", got, tc.want)
			}
		})
	}
}
