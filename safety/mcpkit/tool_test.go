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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/result"
)

const panicText = "index out of range [7] with length 3 in /home/someone/secret.go"

type echoArgs struct {
	Path  string   `json:"path,omitempty"`
	Depth int      `json:"depth,omitempty"`
	Only  []string `json:"only,omitempty"`
	Opts  *struct {
		Force bool `json:"force,omitempty"`
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

// opResult is an OperationResult as the client sees it.
type opResult = mcpkittest.Result

var (
	startClient = mcpkittest.StartInProcess
	call        = mcpkittest.Call
)

func wantCode(t *testing.T, r opResult, code result.Code) {
	t.Helper()
	if r.Code != string(code) {
		t.Fatalf("code %s, want %s: %s", r.Code, code, r.Text)
	}
	wantErr := code != result.OK && code != result.OutputTruncated
	if r.IsError != wantErr || r.OK == wantErr {
		t.Fatalf("isError=%v ok=%v for %s", r.IsError, r.OK, r.Text)
	}
}

func TestPanicInToolBecomesInternalErrorAndServerKeepsServing(t *testing.T) {
	var logs bytes.Buffer
	c := startClient(t, testServer(&logs))
	r := call(t, c, "boom", nil)
	wantCode(t, r, result.InternalError)
	for _, leak := range []string{"index out of range", "secret.go", "goroutine", "panic", ".go:"} {
		if strings.Contains(r.Text, leak) || strings.Contains(string(r.Structured), leak) {
			t.Errorf("result shows %q: %s", leak, r.Text)
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
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"root beside path", map[string]any{"path": "a", "root": "/"}},
		{"follow_symlinks alone", map[string]any{"follow_symlinks": true}},
		{"recursive in a nested object", map[string]any{"path": "a", "opts": map[string]any{"force": true, "recursive": true}}},
		{"empty name", map[string]any{"": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, call(t, c, "echo", tc.args), result.InvalidRequest)
		})
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
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"PATH", map[string]any{"PATH": "/"}},
		{"Path", map[string]any{"Path": "/"}},
		{"Depth", map[string]any{"path": "a", "Depth": 3}},
		{"Force in a nested object", map[string]any{"path": "a", "opts": map[string]any{"Force": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, call(t, c, "echo", tc.args), result.InvalidRequest)
		})
	}
}

func TestRepeatedArgumentIsInvalidRequest(t *testing.T) {
	var a echoArgs
	for _, tc := range []struct{ name, raw string }{
		{"path twice", `{"path":"safe","path":"/"}`},
		{"force twice in a nested object", `{"path":"a","opts":{"force":false,"force":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeArgs(json.RawMessage(tc.raw), &a)
			if result.CodeOf(err) != result.InvalidRequest {
				t.Errorf("%s: %v", tc.raw, err)
			}
		})
	}
}

func TestWrongTypeIsInvalidRequest(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	for _, tc := range []struct {
		name string
		args any
	}{
		{"path number", map[string]any{"path": 5}},
		{"path array", map[string]any{"path": []string{"a"}}},
		{"depth string", map[string]any{"depth": "3"}},
		{"depth fraction", map[string]any{"depth": 1.5}},
		{"only string", map[string]any{"only": "node"}},
		{"only numbers", map[string]any{"only": []any{1}}},
		{"opts bool", map[string]any{"opts": true}},
		{"force string in a nested object", map[string]any{"opts": map[string]any{"force": "yes"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, call(t, c, "echo", tc.args), result.InvalidRequest)
		})
	}
	r := call(t, c, "echo", map[string]any{"path": 5})
	if !strings.Contains(r.Reason, `"path"`) || !strings.Contains(r.Reason, "string") {
		t.Errorf("reason %q does not say path must be a string", r.Reason)
	}
	// Not an object at all, and trailing data.
	var a echoArgs
	for _, tc := range []struct{ name, raw string }{
		{"array", `[1,2]`}, {"string", `"path"`}, {"number", `7`},
		{"trailing object", `{"path":"a"} {"path":"/"}`}, {"truncated", `{"path":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := DecodeArgs(json.RawMessage(tc.raw), &a); result.CodeOf(err) != result.InvalidRequest {
				t.Errorf("%s: %v", tc.raw, err)
			}
		})
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
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"success", map[string]any{"path": "src", "depth": 2, "only": []string{"node"}}},
		{"refusal", map[string]any{"path": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, c, "echo", tc.args)
			var fromText, fromStructured map[string]any
			if err := json.Unmarshal([]byte(r.Text), &fromText); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(r.Structured, &fromStructured); err != nil {
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
		})
	}
}

func TestInvalidCodeBecomesInternalError(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	r := call(t, c, "badcode", nil)
	wantCode(t, r, result.InternalError)
	if strings.Contains(r.Text, "DELETED_EVERYTHING") || strings.Contains(r.Text, "made up") {
		t.Fatalf("the invalid result leaked through: %s", r.Text)
	}
	if r.Action != "badcode" {
		t.Errorf("action %q", r.Action)
	}
}

func TestRefusalIsNeverShownAsSuccess(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	wantCode(t, call(t, c, "liar", nil), result.PolicyDenied)
}

func TestNewToolSetsAllFourAnnotationsExplicitly(t *testing.T) {
	toolsJSON := mcpkittest.ToolsListJSON(t, testServer(io.Discard))
	hints := mcpkittest.CheckAnnotations(t, toolsJSON)
	tools := mcpkittest.Tools(t, toolsJSON)
	if len(tools) != 4 {
		t.Fatalf("%d tools", len(tools))
	}
	// Annotations{} is all false; mcp-go's pessimistic defaults
	// (destructive, open world) must not show.
	if hints["boom"] != (mcpkittest.Hints{}) {
		t.Errorf("boom: annotations %+v, want the declared all false", hints["boom"])
	}
	if h := hints["echo"]; !h.ReadOnly || !h.Idempotent {
		t.Errorf("echo annotations %+v", h)
	}
	for _, tool := range tools {
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
