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
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
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

// NewTool builds a tool definition with all four annotations set
// explicitly. description must be a string literal (DESIGN §3.6); input is
// the JSON Schema of the arguments: additionalProperties:false, and the
// properties, types and required-ness of the struct its handler (Handle)
// decodes into, which CheckTool verifies.
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

// ToResult renders r as a CallToolResult: structured content (a
// json.RawMessage, keys sorted) plus the same JSON as text; isError is set when r is not ok. ok is derived from the code
// (true only for OK and OUTPUT_TRUNCATED), so a refusal can never be shown
// as a success. The text content is always the first item; Handle adds
// after it the resource_link items the tool declared with LinkRisk.
func ToResult(r result.OperationResult) *mcp.CallToolResult {
	if !r.Code.Valid() {
		r = result.With(r.Action, result.InternalError, "the server produced an invalid result code", nil, time.Time{})
	}
	r.OK = r.Code == result.OK || r.Code == result.OutputTruncated
	if r.Detail == nil {
		r.Detail = map[string]any{}
	}
	b := r.JSON()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent{Type: "text", Text: string(b)}},
		StructuredContent: structuredContent(b),
		IsError:           !r.OK,
	}
}

// structuredContent is the structured content of a result whose JSON text
// is b: b decoded into a map, as clients have always received it (keys
// sorted). sortedJSON writes those bytes without the maps (a read_output
// answer carries up to max_output_bytes of output, which decoding and
// encoding again cost more than the rest of the call); what it does not
// handle is decoded.
func structuredContent(b []byte) any {
	if s, ok := sortedJSON(b); ok {
		return s
	}
	var structured map[string]any
	_ = json.Unmarshal(b, &structured)
	return structured
}

// Func is a tool body: it receives the strictly decoded arguments.
type Func[T any] func(ctx context.Context, req mcp.CallToolRequest, args T) result.OperationResult

// Handle wraps f as a tool handler: strict argument decoding into T
// (unknown fields and wrong types are INVALID_REQUEST), panic recovery
// (INTERNAL_ERROR; the server keeps serving), duration measurement. T is
// a struct whose fields the tool's input schema describes (CheckTool).
func Handle[T any](action string, log *slog.Logger, f Func[T]) server.ToolHandlerFunc {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		if p, ok := ctx.Value(argsTypeKey{}).(*reflect.Type); ok {
			*p = reflect.TypeFor[T]() // CheckTool asks; nothing runs
			return nil, nil
		}
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				log.Error("tool panicked", "tool", action, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				r := result.With(action, result.InternalError,
					"the server hit an internal error; the operation did not complete and the server keeps serving", nil, start)
				notifyLog(ctx, r)
				recordResult(ctx, action, r)
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
			recordResult(ctx, action, r)
			return ToResult(r), nil
		}
		p := &pending{}
		lctx, links := withLinks(context.WithValue(ctx, pendingKey{}, p))
		r := f(lctx, req, args)
		if p.r != nil {
			return p.r, nil // a question for the person; the retry carries the answer
		}
		if r.Action == "" {
			r.Action = action
		}
		if r.DurationMS == 0 {
			r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		}
		notifyLog(ctx, r)
		recordResult(ctx, action, r)
		return appendLinks(ToResult(r), links), nil
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
	base = append(base, telemetryOptions()...)
	return server.NewMCPServer(name, version, append(base, opts...)...)
}

// withHooks adds hooks to the server's one Hooks value, creating it if
// none is set yet. mcp-go's server.WithHooks replaces the value, so two
// options that each passed their own (telemetry's and the views') would
// leave only the later one's hooks in force.
func withHooks(add func(*server.Hooks)) server.ServerOption {
	return func(s *server.MCPServer) {
		h := s.GetHooks()
		if h == nil {
			h = &server.Hooks{}
			server.WithHooks(h)(s)
		}
		add(h)
	}
}
