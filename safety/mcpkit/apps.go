package mcpkit

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// MCP Apps (the io.modelcontextprotocol/ui extension): a tool names a ui://
// resource in its _meta.ui.resourceUri, and a client that speaks the
// extension shows that HTML document in a sandboxed frame beside the tool's
// answer. The view talks to the client over postMessage and can call the
// server's tools only through the client, so every call it makes is the
// same tools/call, under the same policy and the same elicitation, as the
// agent's.
const (
	// UIExtension is the extension's identifier in capabilities.extensions.
	UIExtension = "io.modelcontextprotocol/ui"
	// AppMIMEType is the MIME type of an MCP Apps HTML view.
	AppMIMEType = "text/html;profile=mcp-app"
)

// View is one MCP Apps view a server serves: a self-contained HTML document
// (scripts and styles inline, nothing fetched from anywhere) and the tools
// whose answers it shows.
type View struct {
	// URI is the view's ui:// resource URI, such as ui://sweepd/scan.
	URI string
	// Name and Description are the resource's name and description in
	// resources/list (string literals, like tool descriptions).
	Name        string
	Description string
	// HTML is the document, normally a go:embed file of the server. The
	// marker ViewKit in it is replaced by the shared styles and bridge
	// script (view/base.css, view/bridge.js) when it is served.
	HTML []byte
	// Tools are the names of the tools whose _meta.ui.resourceUri is URI.
	Tools []string
}

// ViewKit is the marker a view's HTML carries where the shared kit goes:
// a <style> of view/base.css and a <script> of view/bridge.js (the View side
// of the extension's postMessage protocol, and el(), the only way a view
// puts data on the page: as text).
const ViewKit = "<!--bastion:view-kit-->"

var (
	//go:embed view/bridge.js
	kitScript string
	//go:embed view/base.css
	kitStyle string
)

// ViewDocument returns the document served for v: its HTML with the kit in
// place of ViewKit.
func ViewDocument(v View) string {
	return strings.Replace(string(v.HTML), ViewKit, "<style>\n"+kitStyle+"</style>\n<script>\n"+kitScript+"</script>", 1)
}

// outside matches what in a view document could reach or load from outside
// it: a URL with a scheme or protocol-relative, a CSS url() or @import, a
// script import, fetch, XMLHttpRequest, WebSocket, EventSource, a link,
// src or href attribute, a base element, a form action.
var outside = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://|["'(=\s]//[a-z0-9]|url\(|@import|\bimport\s*\(|\bimport\s+[^;]*\bfrom\b|\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource|sendBeacon|<link|<base|<iframe|<object|<embed|\ssrc\s*=|\shref\s*=|\saction\s*=`)

// OutsideReferences returns every place in doc that could reach or load
// something from outside the document (see outside); a served view has
// none.
func OutsideReferences(doc string) []string {
	return outside.FindAllString(doc, -1)
}

// sinks matches the DOM and JavaScript calls that parse a string as markup
// or as code.
var sinks = regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function|setTimeout\s*\(\s*["'\x60]|setInterval\s*\(\s*["'\x60]|createContextualFragment|DOMParser|srcdoc`)

// MarkupSinks returns every place in doc that parses a string as markup or
// code; a view that puts data on the page only as text has none.
func MarkupSinks(doc string) []string {
	return sinks.FindAllString(doc, -1)
}

// MaxViewBytes bounds one served view; the budget for all views of a
// binary is 300 KB.
const MaxViewBytes = 100 << 10

// ViewProblems returns what is wrong with v as served: each outside
// reference (OutsideReferences), each markup sink (MarkupSinks), and a size
// past MaxViewBytes. A view fit to serve has none; each server's test of
// its views checks this.
func ViewProblems(v View) []string {
	doc := ViewDocument(v)
	var p []string
	for _, r := range OutsideReferences(doc) {
		p = append(p, "outside reference "+strconv.Quote(r))
	}
	for _, r := range MarkupSinks(doc) {
		p = append(p, "markup sink "+strconv.Quote(r))
	}
	if len(doc) > MaxViewBytes {
		p = append(p, fmt.Sprintf("%d bytes, past the %d bytes a view may have", len(doc), MaxViewBytes))
	}
	return p
}

// viewCSP is the view's _meta.ui.csp: no outside origin for anything. A
// client builds the frame's Content-Security-Policy from it, so the view
// can load, connect to and embed nothing beyond its own inline document.
var viewCSP = map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}, "frameDomains": []string{}, "baseUriDomains": []string{}}

// WithViews returns the server options that serve views to clients that
// declared the io.modelcontextprotocol/ui extension with the
// text/html;profile=mcp-app MIME type, and to no other client: for them
// tools/list carries each view's tools with _meta.ui.resourceUri, and
// resources/list and resources/read carry the view's ui:// resource. A
// client without the extension sees exactly the tools and resources of a
// server without views, and reading a view is refused for it. Pass the
// options to NewServer; they add to the server's hooks (withHooks).
func WithViews(views ...View) []server.ServerOption {
	byTool := map[string]string{}
	isView := map[string]bool{}
	for _, v := range views {
		isView[v.URI] = true
		for _, t := range v.Tools {
			byTool[t] = v.URI
		}
	}
	speaks := func(ctx context.Context) bool {
		s := server.ClientSessionFromContext(ctx)
		return s != nil && SpeaksUI(s)
	}
	hooks := withHooks(func(h *server.Hooks) {
		h.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, r *mcp.ListResourcesResult) {
			if r == nil || speaks(ctx) {
				return
			}
			r.Resources = slices.DeleteFunc(r.Resources, func(res mcp.Resource) bool { return isView[res.URI] })
		})
	})
	filter := func(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
		if !speaks(ctx) {
			return tools
		}
		out := make([]mcp.Tool, len(tools))
		for i, t := range tools {
			if uri, ok := byTool[t.Name]; ok {
				t = withUIMeta(t, uri)
			}
			out[i] = t
		}
		return out
	}
	add := func(s *server.MCPServer) {
		for _, v := range views {
			text := ViewDocument(v)
			s.AddResource(viewResource(v), func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				if !speaks(ctx) {
					return nil, mcp.ErrResourceNotFound
				}
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: v.URI, MIMEType: AppMIMEType, Text: text, Meta: viewMeta()}}, nil
			})
		}
	}
	return []server.ServerOption{hooks, server.WithToolFilter(filter), add}
}

// SpeaksUI reports whether the session's client declared the MCP Apps
// extension with the HTML view MIME type at initialize.
func SpeaksUI(s server.ClientSession) bool {
	ci, ok := s.(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	ext, ok := ci.GetClientCapabilities().Extensions[UIExtension].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	return slices.Contains(types, any(AppMIMEType))
}

// withUIMeta returns a copy of t whose _meta.ui.resourceUri is uri; t's own
// Meta is not changed (the registered tool is shared by every session).
func withUIMeta(t mcp.Tool, uri string) mcp.Tool {
	fields := map[string]any{}
	var token mcp.ProgressToken
	if t.Meta != nil {
		maps.Copy(fields, t.Meta.AdditionalFields)
		token = t.Meta.ProgressToken
	}
	fields["ui"] = map[string]any{"resourceUri": uri}
	t.Meta = &mcp.Meta{ProgressToken: token, AdditionalFields: fields}
	return t
}

func viewMeta() map[string]any {
	return map[string]any{"ui": map[string]any{"csp": viewCSP, "prefersBorder": true}}
}

func viewResource(v View) mcp.Resource {
	r := mcp.NewResource(v.URI, v.Name, mcp.WithResourceDescription(v.Description), mcp.WithMIMEType(AppMIMEType))
	r.Meta = &mcp.Meta{AdditionalFields: viewMeta()}
	return r
}
