package mcpkit

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/result"
)

const testViewURI = "ui://test/view"

// viewServer is a server with one tool "shown" that names a view and one
// tool "plain" that does not.
func viewServer() *server.MCPServer {
	m := NewServer("viewtest", "1", "test", WithViews(View{URI: testViewURI, Name: "test view",
		Description: "a test view", HTML: []byte("<!doctype html><p>view</p>"), Tools: []string{"shown"}})...)
	body := func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
		return result.Success("x", "ok", nil, time.Time{})
	}
	schema := json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	m.AddTools(
		server.ServerTool{Tool: NewTool("shown", "shown", Annotations{ReadOnly: true}, schema), Handler: Handle("shown", nil, body)},
		server.ServerTool{Tool: NewTool("plain", "plain", Annotations{ReadOnly: true}, schema), Handler: Handle("plain", nil, body)})
	return m
}

// stdioClient serves m over a pair of pipes, as the binary does over its
// stdin and stdout, and initializes a client that declares caps.
func stdioClient(t *testing.T, m *server.MCPServer, caps mcp.ClientCapabilities) *client.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.NewStdioServer(m).Listen(ctx, inR, outW)
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); inW.Close(); outW.Close(); <-done })
	initialize(t, c, caps)
	return c
}

// httpClient serves m over Streamable HTTP, as --http does, and
// initializes a client that declares caps.
func httpClient(t *testing.T, m *server.MCPServer, caps mcp.ClientCapabilities) *client.Client {
	t.Helper()
	ts := httptest.NewServer(server.NewStreamableHTTPServer(m, server.WithEndpointPath("/mcp")))
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c, caps)
	return c
}

var transports = map[string]func(*testing.T, *server.MCPServer, mcp.ClientCapabilities) *client.Client{
	"stdio": stdioClient, "http": httpClient,
}

func initialize(t *testing.T, c *client.Client, caps mcp.ClientCapabilities) {
	t.Helper()
	ctx := context.Background()
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	req.Params.Capabilities = caps
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
}

func uiCaps() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Extensions: map[string]any{UIExtension: map[string]any{"mimeTypes": []any{AppMIMEType}}}}
}

// listed returns each tool's _meta.ui as JSON ("" when absent) and the URIs
// of resources/list.
func listed(t *testing.T, c *client.Client) (map[string]string, []string) {
	t.Helper()
	ctx := context.Background()
	tl, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{}
	for _, tool := range tl.Tools {
		b, _ := json.Marshal(tool)
		var m struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(b, &m)
		meta[tool.Name] = string(m.Meta["ui"])
	}
	rl, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rl.Resources {
		uris = append(uris, r.URI)
	}
	return meta, uris
}

// A client that did not declare the extension (or declared it without the
// HTML MIME type) gets exactly the tools and resources of a server without
// views: no _meta.ui, no ui:// resource, and reading one is refused.
func TestViewsAreInvisibleToClientsWithoutTheUIExtension(t *testing.T) {
	for name, caps := range map[string]mcp.ClientCapabilities{
		"no extension":   {},
		"other mimetype": {Extensions: map[string]any{UIExtension: map[string]any{"mimeTypes": []any{"text/html"}}}},
	} {
		for tn, connect := range transports {
			t.Run(name+" over "+tn, func(t *testing.T) {
				c := connect(t, viewServer(), caps)
				meta, uris := listed(t, c)
				if meta["shown"] != "" || meta["plain"] != "" {
					t.Fatalf("_meta.ui shown to a client without the extension: %v", meta)
				}
				if len(uris) != 0 {
					t.Fatalf("resources/list = %v, want none", uris)
				}
				var req mcp.ReadResourceRequest
				req.Params.URI = testViewURI
				if _, err := c.ReadResource(context.Background(), req); err == nil {
					t.Fatal("a client without the extension read the view")
				}
			})
		}
	}
}

// A client that speaks MCP Apps sees the view on the named tool only, and
// reads it as text/html;profile=mcp-app with a CSP that names no origin.
func TestViewsAreServedToClientsWithTheUIExtension(t *testing.T) {
	for tn, connect := range transports {
		t.Run(tn, func(t *testing.T) { servedTo(t, connect(t, viewServer(), uiCaps())) })
	}
}

func servedTo(t *testing.T, c *client.Client) {
	meta, uris := listed(t, c)
	if meta["shown"] != `{"resourceUri":"ui://test/view"}` {
		t.Fatalf("shown's _meta.ui = %s", meta["shown"])
	}
	if meta["plain"] != "" {
		t.Fatalf("plain's _meta.ui = %s, want none", meta["plain"])
	}
	if len(uris) != 1 || uris[0] != testViewURI {
		t.Fatalf("resources/list = %v", uris)
	}
	var req mcp.ReadResourceRequest
	req.Params.URI = testViewURI
	rr, err := c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := rr.Contents[0].(mcp.TextResourceContents)
	if !ok || tc.MIMEType != AppMIMEType || !strings.Contains(tc.Text, "<p>view</p>") {
		t.Fatalf("read = %#v", rr.Contents[0])
	}
	csp, _ := json.Marshal(tc.Meta["ui"].(map[string]any)["csp"])
	if strings.Contains(string(csp), "http") || strings.Contains(string(csp), "//") {
		t.Fatalf("csp names an origin: %s", csp)
	}
	// The tool still answers as before.
	var call mcp.CallToolRequest
	call.Params.Name = "shown"
	if res, err := c.CallTool(context.Background(), call); err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
}

// The shared kit every view carries loads nothing from outside and never
// turns a string into markup or code.
func TestViewKitLoadsNothingAndWritesNoMarkup(t *testing.T) {
	doc := ViewDocument(View{HTML: []byte("<!doctype html><head>" + ViewKit + "</head>")})
	if !strings.Contains(doc, "BastionView") || !strings.Contains(doc, "--bg") {
		t.Fatal("the kit was not put in place of the marker")
	}
	if got := OutsideReferences(doc); len(got) != 0 {
		t.Fatalf("outside references in the view kit: %q", got)
	}
	if got := MarkupSinks(doc); len(got) != 0 {
		t.Fatalf("markup sinks in the view kit: %q", got)
	}
	// The patterns do find what they are for.
	for _, bad := range []string{`<img src="https://x.example/a.png">`, `fetch("/x")`, `@import "a.css"`, `<a href=//evil>`} {
		if len(OutsideReferences(bad)) == 0 {
			t.Errorf("OutsideReferences missed %q", bad)
		}
	}
	for _, bad := range []string{`e.innerHTML = name`, `eval("1")`, `x.insertAdjacentHTML("beforeend", s)`} {
		if len(MarkupSinks(bad)) == 0 {
			t.Errorf("MarkupSinks missed %q", bad)
		}
	}
}

// TestViewsKeepTheTelemetryHooks: the views' hook (hiding their resources
// from clients without the extension) and telemetry's (the JSON-RPC id and
// protocol version on the server span) are both in force on one server,
// whichever option came first. mcp-go's WithHooks replaces the server's
// hooks, which once left a server with views without telemetry's.
func TestViewsKeepTheTelemetryHooks(t *testing.T) {
	v := View{URI: "ui://test/v", Name: "v", Description: "a view", HTML: []byte("<p>" + ViewKit + "</p>"), Tools: []string{"t"}}
	h := NewServer("t", "0", "", WithViews(v)...).GetHooks()
	if h == nil || len(h.OnBeforeAny) != 1 || len(h.OnError) != 1 || len(h.OnAfterListResources) != 1 {
		t.Fatalf("hooks after telemetry then views: %+v", h)
	}
}

// TestViewProblemsNamesEachFault: a view that loads a script from outside,
// writes markup from data and is too large gets each fault named, so the
// servers' view tests can fail.
func TestViewProblemsNamesEachFault(t *testing.T) {
	bad := View{URI: "ui://test/bad", HTML: []byte(`<script src="https://cdn.example/x.js"></script><script>el.innerHTML = name</script>` +
		strings.Repeat(" ", MaxViewBytes) + ViewKit)}
	got := strings.Join(ViewProblems(bad), "; ")
	for _, want := range []string{"outside reference", "markup sink \"innerHTML\"", "bytes, past the"} {
		if !strings.Contains(got, want) {
			t.Errorf("ViewProblems = %s; want %q", got, want)
		}
	}
}
