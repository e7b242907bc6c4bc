package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/result"
)

const panicText = "index out of range [7] with length 3 in /home/someone/secret.go"

type echoArgs struct {
	Path  string   `json:"path"`
	Depth int      `json:"depth,omitempty"`
	Only  []string `json:"only,omitempty"`
	Opts  *struct {
		Force bool `json:"force"`
	} `json:"opts,omitempty"`
	Big int64 `json:"big,omitempty"`
}

var echoSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},` +
	`"depth":{"type":"integer"},"only":{"type":"array","items":{"type":"string"}},` +
	`"opts":{"type":"object","properties":{"force":{"type":"boolean"}},"additionalProperties":false},` +
	`"big":{"type":"integer"}},"additionalProperties":false}`)

var noArgsSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// testServer builds a server with tools that stand for well-behaved and
// misbehaving tool bodies. logs receives the server's log.
func testServer(logs io.Writer) *server.MCPServer {
	log := slog.New(slog.NewTextHandler(logs, nil))
	s := NewServer("mcpkit-test", "0", "test server")
	s.AddTool(NewTool("echo", "Echo the arguments.", Annotations{ReadOnly: true, Idempotent: true}, echoSchema),
		Handle("echo", log, func(_ context.Context, _ mcp.CallToolRequest, a echoArgs) result.OperationResult {
			return result.Success("", "echoed", a, time.Time{})
		}))
	s.AddTool(NewTool("boom", "Panic.", Annotations{}, noArgsSchema),
		Handle("boom", log, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			panic(errors.New(panicText))
		}))
	s.AddTool(NewTool("badcode", "Return a code outside the set.", Annotations{}, noArgsSchema),
		Handle("badcode", log, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			return result.OperationResult{OK: true, Code: "DELETED_EVERYTHING", Reason: "made up"}
		}))
	s.AddTool(NewTool("liar", "Claim success with a refusal code.", Annotations{}, noArgsSchema),
		Handle("liar", log, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			return result.OperationResult{OK: true, Code: result.PolicyDenied, Reason: "denied"}
		}))
	return s
}

func startClient(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = "2025-06-18"
	req.Params.ClientInfo = mcp.Implementation{Name: "mcpkit-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return c
}

// opResult is an OperationResult as the client sees it.
type opResult struct {
	OK         bool            `json:"ok"`
	Code       string          `json:"code"`
	Action     string          `json:"action"`
	Reason     string          `json:"reason"`
	Detail     json.RawMessage `json:"detail"`
	DurationMS float64         `json:"duration_ms"`

	isError    bool
	text       string
	structured json.RawMessage
}

func call(t *testing.T, c *client.Client, name string, args any) opResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("CallTool %s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	var r opResult
	if err := json.Unmarshal([]byte(tc.Text), &r); err != nil {
		t.Fatalf("%s: text is not an OperationResult: %q", name, tc.Text)
	}
	r.isError, r.text = res.IsError, tc.Text
	if r.structured, err = json.Marshal(res.StructuredContent); err != nil {
		t.Fatal(err)
	}
	return r
}

func wantCode(t *testing.T, r opResult, code result.Code) {
	t.Helper()
	if r.Code != string(code) {
		t.Fatalf("code %s, want %s: %s", r.Code, code, r.text)
	}
	wantErr := code != result.OK && code != result.OutputTruncated
	if r.isError != wantErr || r.OK == wantErr {
		t.Fatalf("isError=%v ok=%v for %s", r.isError, r.OK, r.text)
	}
}

func TestPanicInToolBecomesInternalErrorAndServerKeepsServing(t *testing.T) {
	var logs bytes.Buffer
	c := startClient(t, testServer(&logs))
	r := call(t, c, "boom", nil)
	wantCode(t, r, result.InternalError)
	for _, leak := range []string{"index out of range", "secret.go", "goroutine", "panic", ".go:"} {
		if strings.Contains(r.text, leak) || strings.Contains(string(r.structured), leak) {
			t.Errorf("result shows %q: %s", leak, r.text)
		}
	}
	if r.Action != "boom" {
		t.Errorf("action %q", r.Action)
	}
	// The operator still learns what happened, on the log only.
	if !strings.Contains(logs.String(), "index out of range") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
	// The server keeps serving: a second panic and a normal call both work.
	wantCode(t, call(t, c, "boom", nil), result.InternalError)
	ok := call(t, c, "echo", map[string]any{"path": "a"})
	wantCode(t, ok, result.OK)
}

func TestUnknownArgumentIsInvalidRequest(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	for _, args := range []map[string]any{
		{"path": "a", "root": "/"},
		{"follow_symlinks": true},
		{"path": "a", "opts": map[string]any{"force": true, "recursive": true}},
		{"": "x"},
	} {
		r := call(t, c, "echo", args)
		wantCode(t, r, result.InvalidRequest)
	}
	r := call(t, c, "echo", map[string]any{"path": "a", "root": "/"})
	if !strings.Contains(r.Reason, `"root"`) {
		t.Errorf("reason does not name the unknown argument: %q", r.Reason)
	}
}

// encoding/json matches names case-insensitively; a client that sends
// "PATH" or "Force" must be refused, not silently mapped.
func TestArgumentNamesAreCaseSensitive(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	for _, args := range []map[string]any{
		{"PATH": "/"},
		{"Path": "/"},
		{"path": "a", "Depth": 3},
		{"path": "a", "opts": map[string]any{"Force": true}},
	} {
		r := call(t, c, "echo", args)
		wantCode(t, r, result.InvalidRequest)
	}
}

func TestRepeatedArgumentIsInvalidRequest(t *testing.T) {
	var a echoArgs
	for _, raw := range []string{
		`{"path":"safe","path":"/"}`,
		`{"path":"a","opts":{"force":false,"force":true}}`,
	} {
		err := DecodeArgs(json.RawMessage(raw), &a)
		if result.CodeOf(err) != result.InvalidRequest {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestWrongTypeIsInvalidRequest(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	for _, args := range []any{
		map[string]any{"path": 5},
		map[string]any{"path": []string{"a"}},
		map[string]any{"depth": "3"},
		map[string]any{"depth": 1.5},
		map[string]any{"only": "node"},
		map[string]any{"only": []any{1}},
		map[string]any{"opts": true},
		map[string]any{"opts": map[string]any{"force": "yes"}},
	} {
		r := call(t, c, "echo", args)
		wantCode(t, r, result.InvalidRequest)
	}
	r := call(t, c, "echo", map[string]any{"path": 5})
	if !strings.Contains(r.Reason, `"path"`) || !strings.Contains(r.Reason, "string") {
		t.Errorf("reason %q does not say path must be a string", r.Reason)
	}
	// Not an object at all, and trailing data.
	var a echoArgs
	for _, raw := range []string{`[1,2]`, `"path"`, `7`, `{"path":"a"} {"path":"/"}`, `{"path":`} {
		if err := DecodeArgs(json.RawMessage(raw), &a); result.CodeOf(err) != result.InvalidRequest {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestLargeIntegerArgumentKeepsPrecision(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	var req mcp.CallToolRequest
	req.Params.Name = "echo"
	req.Params.RawArguments = json.RawMessage(`{"big":9007199254740993}`)
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(mcp.TextContent).Text; !strings.Contains(text, `"big":9007199254740993`) {
		t.Fatalf("2^53+1 did not survive decoding: %s", text)
	}
}

func TestOversizedArgumentsAreRefused(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	r := call(t, c, "echo", map[string]any{"path": strings.Repeat("a", MaxArgumentBytes)})
	wantCode(t, r, result.InvalidRequest)
	if !strings.Contains(r.Reason, "exceed") {
		t.Errorf("reason %q", r.Reason)
	}
	wantCode(t, call(t, c, "echo", map[string]any{"path": strings.Repeat("a", 1000)}), result.OK)
}

func TestResultHasStructuredContentAndSameJSONText(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	for _, args := range []map[string]any{
		{"path": "src", "depth": 2, "only": []string{"node"}},
		{"path": 1},
	} {
		r := call(t, c, "echo", args)
		var fromText, fromStructured map[string]any
		if err := json.Unmarshal([]byte(r.text), &fromText); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.structured, &fromStructured); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(fromText)
		b, _ := json.Marshal(fromStructured)
		if !bytes.Equal(a, b) {
			t.Fatalf("text and structured content differ:\n%s\n%s", a, b)
		}
		for _, k := range []string{"ok", "code", "action", "reason", "detail", "duration_ms"} {
			if _, ok := fromStructured[k]; !ok {
				t.Errorf("structured content lacks %q: %s", k, b)
			}
		}
		if d, ok := fromStructured["detail"].(map[string]any); !ok || d == nil {
			t.Errorf("detail is not an object: %s", b)
		}
	}
}

func TestInvalidCodeBecomesInternalError(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	r := call(t, c, "badcode", nil)
	wantCode(t, r, result.InternalError)
	if strings.Contains(r.text, "DELETED_EVERYTHING") || strings.Contains(r.text, "made up") {
		t.Fatalf("the invalid result leaked through: %s", r.text)
	}
	if r.Action != "badcode" {
		t.Errorf("action %q", r.Action)
	}
}

func TestRefusalIsNeverShownAsSuccess(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	wantCode(t, call(t, c, "liar", nil), result.PolicyDenied)
}

func toolsListJSON(t *testing.T, s *server.MCPServer) []map[string]any {
	t.Helper()
	resp := s.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatalf("tools/list cannot be marshalled: %v", err)
	}
	var env struct {
		Result *struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Result == nil {
		t.Fatalf("tools/list failed: %s", raw)
	}
	return env.Result.Tools
}

func TestNewToolSetsAllFourAnnotationsExplicitly(t *testing.T) {
	tools := toolsListJSON(t, testServer(io.Discard))
	if len(tools) != 4 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tool := range tools {
		ann, ok := tool["annotations"].(map[string]any)
		if !ok {
			t.Fatalf("%v has no annotations", tool["name"])
		}
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			v, ok := ann[k].(bool)
			if !ok {
				t.Errorf("%v: %s missing from %v", tool["name"], k, ann)
			}
			if tool["name"] == "boom" && v {
				// Annotations{} is all false; mcp-go's pessimistic
				// defaults (destructive, open world) must not show.
				t.Errorf("boom: %s = true, want the declared false", k)
			}
		}
		if tool["name"] == "echo" && (ann["readOnlyHint"] != true || ann["idempotentHint"] != true) {
			t.Errorf("echo annotations %v", ann)
		}
		in, _ := json.Marshal(tool["inputSchema"])
		if tool["name"] == "echo" {
			var want any
			_ = json.Unmarshal(echoSchema, &want)
			w, _ := json.Marshal(want)
			if !bytes.Equal(in, w) {
				t.Errorf("echo inputSchema %s, want the raw schema %s", in, w)
			}
		}
		if _, ok := tool["outputSchema"].(map[string]any); !ok {
			t.Errorf("%v has no outputSchema", tool["name"])
		}
	}
}

// ResultSchema's enum must list exactly the closed set of codes.
func TestResultSchemaListsEveryCode(t *testing.T) {
	var s struct {
		Properties struct {
			Code struct {
				Enum []string `json:"enum"`
			} `json:"code"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(ResultSchema, &s); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.Properties.Code.Enum, ",")
	var want []string
	for _, c := range result.Codes {
		want = append(want, string(c))
	}
	if got != strings.Join(want, ",") {
		t.Fatalf("schema enum %s, codes %s", got, want)
	}
}

// FuzzDecodeArgs: no input panics, and an accepted object names only the
// exact argument names of the schema, each once.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a"}`, `{"PATH":"a"}`, `{"path":"a","path":"b"}`,
		`{"opts":{"force":true}}`, `{"only":["a"]}`, `null`, `[]`, `{"path":"a"}{}`} {
		f.Add([]byte(s))
	}
	allowed := map[string]bool{"path": true, "depth": true, "only": true, "opts": true, "big": true}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a echoArgs
		if err := DecodeArgs(json.RawMessage(b), &a); err != nil {
			if result.CodeOf(err) != result.InvalidRequest {
				t.Fatalf("refusal with code %s", result.CodeOf(err))
			}
			return
		}
		var obj []kv
		if !splitObject(b, &obj) {
			return // null or whitespace, decoded as {}
		}
		seen := map[string]bool{}
		for _, e := range obj {
			if !allowed[e.key] || seen[e.key] {
				t.Fatalf("accepted argument %q in %s", e.key, b)
			}
			seen[e.key] = true
		}
	})
}
