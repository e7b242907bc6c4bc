// Package mcpkit is the only package of safety that imports mcp-go. It turns
// OperationResults into tool results, builds tools whose four annotations are
// always explicit, decodes arguments strictly, and serves a server over stdio
// or Streamable HTTP.
//
// It refuses to let anything but an OperationResult reach a client from a
// tool: unknown or mistyped arguments become INVALID_REQUEST, a panic becomes
// INTERNAL_ERROR (and the server keeps serving), a Go error's text is never
// shown. Over HTTP it refuses non-loopback listeners without a bearer token,
// foreign Host and Origin headers, and oversized request bodies.
package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Annotations are the four behaviour hints every tool must declare.
type Annotations struct {
	Title       string
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// ResultSchema is the output schema shared by every tool: an OperationResult.
var ResultSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"ok":{"type":"boolean"},` +
	`"code":{"type":"string","enum":["OK","POLICY_DENIED","INVALID_REQUEST","PATH_ESCAPE","NOT_FOUND","STALE","NEEDS_EXPLICIT_REQUEST","TIMEOUT","LIMIT_EXCEEDED","OUTPUT_TRUNCATED","OPERATION_FAILED","AUDIT_UNAVAILABLE","INTERNAL_ERROR"]},` +
	`"action":{"type":"string"},"reason":{"type":"string"},"detail":{"type":"object"},"duration_ms":{"type":"number"}},` +
	`"required":["ok","code","action","reason","detail","duration_ms"]}`)

// NewTool builds a tool definition with all four annotations set
// explicitly. description must be a string literal (DESIGN §3.6); input is
// the JSON Schema of the arguments and should say additionalProperties:false.
//
// Only the raw schemas are kept: mcp.NewTool fills in a default structured
// input schema, and mcp-go refuses to marshal a tool that has both (which
// would make tools/list fail for every client).
func NewTool(name, description string, a Annotations, input json.RawMessage) mcp.Tool {
	t := mcp.NewTool(name,
		mcp.WithDescription(description),
		mcp.WithRawInputSchema(input),
		mcp.WithRawOutputSchema(ResultSchema),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           a.Title,
			ReadOnlyHint:    &a.ReadOnly,
			DestructiveHint: &a.Destructive,
			IdempotentHint:  &a.Idempotent,
			OpenWorldHint:   &a.OpenWorld,
		}),
	)
	t.InputSchema = mcp.ToolInputSchema{}
	t.OutputSchema = mcp.ToolOutputSchema{}
	return t
}

// ToResult renders r as a CallToolResult: structured content plus the same
// JSON as text; isError is set when r is not ok. ok is derived from the code
// (true only for OK and OUTPUT_TRUNCATED), so a refusal can never be shown
// as a success.
func ToResult(r result.OperationResult) *mcp.CallToolResult {
	if !r.Code.Valid() {
		r = result.With(r.Action, result.InternalError, "the server produced an invalid result code", nil, time.Time{})
	}
	r.OK = r.Code == result.OK || r.Code == result.OutputTruncated
	if r.Detail == nil {
		r.Detail = map[string]any{}
	}
	b := r.JSON()
	var structured map[string]any
	_ = json.Unmarshal(b, &structured)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent{Type: "text", Text: string(b)}},
		StructuredContent: structured,
		IsError:           !r.OK,
	}
}

// Func is a tool body: it receives the strictly decoded arguments.
type Func[T any] func(ctx context.Context, req mcp.CallToolRequest, args T) result.OperationResult

// Handle wraps f as a tool handler: strict argument decoding into T
// (unknown fields and wrong types are INVALID_REQUEST), panic recovery
// (INTERNAL_ERROR; the server keeps serving), duration measurement.
func Handle[T any](action string, log *slog.Logger, f Func[T]) server.ToolHandlerFunc {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				log.Error("tool panicked", "tool", action, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				r := result.With(action, result.InternalError,
					"the server hit an internal error; the operation did not complete and the server keeps serving", nil, start)
				notifyLog(ctx, r)
				res = ToResult(r)
				err = nil
			}
		}()
		var args T
		// The raw wire bytes, when mcp-go kept them: a repeated name or a
		// large integer survives only there, not in the decoded map.
		if rerr := DecodeArgs(req.GetRawArguments(), &args); rerr != nil {
			r := result.Fail(action, rerr, nil, start)
			notifyLog(ctx, r)
			return ToResult(r), nil
		}
		r := f(ctx, req, args)
		if r.Action == "" {
			r.Action = action
		}
		if r.DurationMS == 0 {
			r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		}
		notifyLog(ctx, r)
		return ToResult(r), nil
	}
}

// notifyLog sends one MCP logging notification per tool call: the action,
// code, reason and duration (never the detail, which may carry command
// output). Refusals are "warning", internal errors "error", the rest
// "info". mcp-go drops notifications below the level the client set with
// logging/setLevel (default "error"), so a client hears about ordinary calls
// only when it asks.
func notifyLog(ctx context.Context, r result.OperationResult) {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return
	}
	level := mcp.LoggingLevelInfo
	switch {
	case r.Code == result.InternalError:
		level = mcp.LoggingLevelError
	case !r.Code.Valid() || r.Code != result.OK && r.Code != result.OutputTruncated:
		level = mcp.LoggingLevelWarning
	}
	_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(level, "bastion",
		map[string]any{"action": r.Action, "code": r.Code, "reason": r.Reason, "duration_ms": r.DurationMS}))
}

// MaxArgumentBytes bounds the encoded arguments of one call.
const MaxArgumentBytes = 1 << 20

// DecodeArgs decodes raw tool arguments into dst strictly: unknown names,
// names that differ from the schema only in case ("PATH" for "path"),
// names given twice, wrong types and oversized input are refused with
// INVALID_REQUEST.
func DecodeArgs(raw any, dst any) error {
	var b []byte
	switch v := raw.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return result.New(result.InvalidRequest, "the arguments are not a JSON object")
		}
	}
	if len(b) > MaxArgumentBytes {
		return result.New(result.InvalidRequest, fmt.Sprintf("the arguments exceed %d bytes", MaxArgumentBytes))
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		b = []byte("{}")
	}
	if err := checkNames(b, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return result.New(result.InvalidRequest, argError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return result.New(result.InvalidRequest, "the arguments must be a single JSON object")
	}
	return nil
}

// checkNames refuses object keys that encoding/json would accept but that
// are not exactly a field's name: encoding/json matches names without regard
// to case and lets a repeated name silently override the first. It walks
// nested structs, slices and maps of structs. Input that is not valid JSON
// or whose shape does not match t is left to the decoder to report.
func checkNames(b []byte, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj []kv
		if !splitObject(b, &obj) {
			return nil
		}
		fields := jsonFields(t)
		seen := make(map[string]bool, len(obj))
		for _, e := range obj {
			ft, ok := fields[e.key]
			if !ok {
				return result.New(result.InvalidRequest, fmt.Sprintf("unknown argument %q; this tool accepts only the arguments in its schema, with names spelled exactly as there", e.key))
			}
			if seen[e.key] {
				return result.New(result.InvalidRequest, fmt.Sprintf("argument %q is given more than once", e.key))
			}
			seen[e.key] = true
			if err := checkNames(e.val, ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var elems []json.RawMessage
		if json.Unmarshal(b, &elems) != nil {
			return nil
		}
		for _, e := range elems {
			if err := checkNames(e, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		for _, v := range m {
			if err := checkNames(v, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

type kv struct {
	key string
	val json.RawMessage
}

// splitObject reads b as one JSON object into its keys and values, in
// order and keeping repeats. It reports false when b is not an object.
func splitObject(b []byte, out *[]kv) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, ok := tok.(string)
		if !ok {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		*out = append(*out, kv{key, v})
	}
	return true
}

// jsonFields maps the exact JSON names encoding/json decodes into struct
// type t (promoted fields of embedded structs included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				continue // its fields are visited as promoted fields
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup || len(f.Index) == 1 {
			m[name] = f.Type
		}
	}
	return m
}

func argError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return "the arguments must be a JSON object"
		}
		return fmt.Sprintf("argument %q must be of type %s", te.Field, jsonType(te.Type.Kind().String()))
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown argument " + f + "; this tool accepts only the arguments in its schema"
	}
	return "the arguments are not valid JSON for this tool"
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "ptr":
		return "the documented type"
	}
	return "number"
}

// Progress returns a function that sends notifications/progress for the
// call when the client supplied a progressToken, and a no-op otherwise.
func Progress(ctx context.Context, req mcp.CallToolRequest) func(done, total float64, msg string) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return func(float64, float64, string) {}
	}
	srv := server.ServerFromContext(ctx)
	token := req.Params.Meta.ProgressToken
	return func(done, total float64, msg string) {
		if srv == nil {
			return
		}
		p := map[string]any{"progressToken": token, "progress": done}
		if total > 0 {
			p["total"] = total
		}
		if msg != "" {
			p["message"] = msg
		}
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", p)
	}
}

// NewServer builds an MCP server with Bastion's common options: tools and
// resources capabilities, panic recovery, logging capability.
func NewServer(name, version, instructions string, opts ...server.ServerOption) *server.MCPServer {
	base := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithLogging(),
		server.WithInstructions(instructions),
	}
	return server.NewMCPServer(name, version, append(base, opts...)...)
}
