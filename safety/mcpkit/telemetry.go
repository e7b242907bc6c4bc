package mcpkit

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mark3labs/mcp-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/redact"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/telemetry"
)

// StartTelemetry starts OpenTelemetry export as pol's [telemetry] section
// and the OTEL_* environment say (safety/telemetry). Call it right after
// the policy is loaded; the deferred StopTelemetry flushes within
// telemetry.ShutdownTimeout. Off unless configured.
func (c *CLI) StartTelemetry(pol *config.Policy) error {
	rs, err := redact.CompileWith(pol.Redaction.Extras(), redact.Options{})
	if err != nil {
		rs = nil // the server refuses the pattern itself; telemetry takes the builtin ones
	}
	stop, err := telemetry.Setup(telemetry.Options{Service: c.Name, Version: c.Version, Policy: pol.Telemetry,
		Redact: rs, Logger: c.Logger})
	c.stopTelemetry = stop
	return err
}

// StopTelemetry flushes and stops what StartTelemetry started.
func (c *CLI) StopTelemetry() {
	if c.stopTelemetry != nil {
		c.stopTelemetry()
	}
}

// telemetryOptions install the server span of every request: mcp-go's
// tracing hooks, with a tracer that names spans and attributes after the
// OpenTelemetry semantic conventions for MCP, trace context taken from
// params._meta (traceparent, tracestate) and, failing that, from the HTTP
// headers, and the JSON-RPC id from a hook. With telemetry off each of
// them returns at once.
func telemetryOptions() []server.ServerOption {
	hooks := withHooks(func(hooks *server.Hooks) {
		hooks.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, _ any) {
			if s := serverSpanFrom(ctx); s != nil && id != nil {
				s.sp.SetAttributes(attribute.String("jsonrpc.request.id", fmt.Sprint(id)))
				if v := protocolVersion(ctx); v != "" {
					s.sp.SetAttributes(attribute.String("mcp.protocol.version", v))
				}
			}
		})
		hooks.AddOnError(func(ctx context.Context, _ any, _ mcp.MCPMethod, _ any, err error) {
			if s := serverSpanFrom(ctx); s != nil && s.code == "" {
				s.code = "_OTHER" // a JSON-RPC error: its message may quote the request, so only its kind
			}
		})
	})
	return []server.ServerOption{
		server.WithTracer(mcpTracer{}),
		server.WithPropagator(headerPropagator{}),
		server.WithMetaPropagator(metaPropagator{}),
		hooks,
	}
}

// protocolVersion is the request's or the session's MCP protocol version.
func protocolVersion(ctx context.Context) string {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ProtocolVersion != "" {
		return info.ProtocolVersion
	}
	if s, ok := server.ClientSessionFromContext(ctx).(interface{ ProtocolVersion() string }); ok {
		return s.ProtocolVersion()
	}
	return ""
}

var traceContext = propagation.TraceContext{}

// metaPropagator reads W3C trace context from params._meta.
type metaPropagator struct{}

func (metaPropagator) InjectMeta(_ context.Context, meta *mcp.Meta) *mcp.Meta { return meta }

func (metaPropagator) ExtractMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if !telemetry.Enabled() || meta == nil || meta.AdditionalFields == nil {
		return ctx
	}
	tp, _ := meta.AdditionalFields["traceparent"].(string)
	if tp == "" {
		return ctx
	}
	ts, _ := meta.AdditionalFields["tracestate"].(string)
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": ts})
}

// headerPropagator reads W3C trace context from HTTP headers when _meta
// carried none.
type headerPropagator struct{}

func (headerPropagator) Inject(context.Context, http.Header) {}

func (headerPropagator) Extract(ctx context.Context, h http.Header) context.Context {
	if !telemetry.Enabled() || h.Get("traceparent") == "" || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// mcpTracer is mcp-go's tracing.Tracer on Bastion's OpenTelemetry tracer.
// The server span is named "{mcp.method.name}" or, for a tool call,
// "tools/call {gen_ai.tool.name}"; mcp-go's attribute names are mapped to
// the conventions' (mcp.method → mcp.method.name, mcp.tool.name →
// gen_ai.tool.name). mcp-go's second, internal span per tool call is not
// made: the server span already is the tool call.
type mcpTracer struct{}

type serverSpanKey struct{}

func (mcpTracer) Start(ctx context.Context, name string, kind tracing.SpanKind, attrs ...tracing.Attribute) (context.Context, tracing.Span) {
	if !telemetry.Enabled() || kind != tracing.SpanKindServer {
		return tracing.NoopTracer().Start(ctx, name, kind)
	}
	method := strings.TrimPrefix(name, "mcp.")
	s := &serverSpan{method: method, start: time.Now()}
	kv := make([]attribute.KeyValue, 0, len(attrs)+1)
	for _, a := range attrs {
		kv = append(kv, s.mapAttr(a))
	}
	ctx, s.sp = telemetry.Tracer().Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(kv...))
	ctx = tracing.ContextWithSpan(ctx, s)
	return context.WithValue(ctx, serverSpanKey{}, s), s
}

func serverSpanFrom(ctx context.Context) *serverSpan {
	s, _ := ctx.Value(serverSpanKey{}).(*serverSpan)
	return s
}

// serverSpan is one request's span; End also records
// mcp.server.operation.duration.
type serverSpan struct {
	sp     trace.Span
	method string
	tool   string
	code   string // error.type: the result code of a failed call
	result string // bastion.result.code: a tool call's result code, OK included
	start  time.Time
}

func (s *serverSpan) mapAttr(a tracing.Attribute) attribute.KeyValue {
	switch a.Key {
	case "mcp.method":
		return attribute.String("mcp.method.name", a.Value)
	case "mcp.tool.name":
		s.tool = a.Value
		return attribute.String("gen_ai.tool.name", a.Value)
	}
	return attribute.String(a.Key, a.Value)
}

func (s *serverSpan) SetAttributes(attrs ...tracing.Attribute) {
	for _, a := range attrs {
		s.sp.SetAttributes(s.mapAttr(a))
	}
	if s.tool != "" {
		s.sp.SetName(s.method + " " + s.tool)
		s.sp.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"))
	}
}

func (s *serverSpan) RecordError(error) {} // a Go error's text is never sent

func (s *serverSpan) SetStatus(code tracing.StatusCode, _ string) {
	if code == tracing.StatusError && s.code == "" {
		s.code = "_OTHER"
	}
}

func (s *serverSpan) End() {
	if s.result != "" {
		s.sp.SetAttributes(attribute.String("bastion.result.code", s.result))
	}
	if s.code != "" {
		s.sp.SetAttributes(attribute.String("error.type", s.code))
		s.sp.SetStatus(codes.Error, s.code)
	}
	s.sp.End()
	telemetry.Operation(s.method, s.tool, s.code, time.Since(s.start))
}

// recordResult puts a tool result's code on the request's span
// (bastion.result.code always; error.type unless the call succeeded: OK or
// OUTPUT_TRUNCATED) and counts a refusal by code and rule.
func recordResult(ctx context.Context, tool string, r result.OperationResult) {
	s := serverSpanFrom(ctx)
	if s == nil {
		return
	}
	s.result = string(r.Code)
	if r.Code == result.OK || r.Code == result.OutputTruncated {
		s.code = "" // a success: no error.type
		return
	}
	s.code = string(r.Code)
	var rule string
	if d, ok := r.Detail.(map[string]any); ok {
		rule, _ = d["rule"].(string)
	}
	telemetry.Refusal(tool, string(r.Code), rule)
}
