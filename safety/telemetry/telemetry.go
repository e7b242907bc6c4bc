// Package telemetry sends what a Bastion server does to OpenTelemetry:
// one server span per MCP request (child spans for the steps that cost
// time), the mcp.server.operation.duration histogram and Bastion's own
// counters, and every audit record as a log record. It is off unless
// configured, by the standard OTEL_* environment variables or by the
// policy's [telemetry] section, and when off every function here is a
// no-op that allocates nothing.
//
// Export never stands in a tool call's way: spans, log records and metric
// points are queued in bounded queues and sent by background workers. A
// Collector that is down, slow or refusing loses telemetry, never a call
// or an audit record: what could not be sent is counted in
// bastion.telemetry.dropped and said once in the server log. Shutdown
// flushes within ShutdownTimeout.
//
// Only what an audit record already holds leaves the machine, redacted
// again with the server's secret patterns; tool output never does.
package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/redact"
)

// Queue and timing bounds. A queue that is full drops what arrives (and
// counts it); an export that hangs is cut off after ExportTimeout.
const (
	// QueueSize bounds the spans and the log records waiting for export,
	// each.
	QueueSize = 2048
	// ExportTimeout bounds one export to the Collector.
	ExportTimeout = 5 * time.Second
	// BatchDelay is how long a span or log record waits for a batch.
	BatchDelay = time.Second
	// MetricInterval is how often metrics are exported.
	MetricInterval = 10 * time.Second
	// ShutdownTimeout bounds the flush at shutdown.
	ShutdownTimeout = 3 * time.Second
)

// Options configure Setup.
type Options struct {
	// Service is the server's name (the default service.name).
	Service string
	// Version is service.version.
	Version string
	// Policy is the policy's [telemetry] section.
	Policy config.Telemetry
	// Redact is applied to every string that leaves in a log record
	// (nil: the builtin patterns).
	Redact *redact.Set
	// Logger receives the one line that says telemetry is being dropped.
	Logger *slog.Logger
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// state is what is set up; nil when telemetry is off.
type state struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	lp     *sdklog.LoggerProvider
	tracer trace.Tracer
	logger log.Logger
	m      *instruments
	redact *redact.Set
	drops  *drops
	audits *auditQueue
}

var cur atomic.Pointer[state]

var (
	noopTracer = tracenoop.NewTracerProvider().Tracer("")
	noopLogger = lognoop.NewLoggerProvider().Logger("")
)

// scope is the instrumentation scope of everything Bastion emits.
const scope = "github.com/bastion-mcp/bastion/safety/telemetry"

// Setup starts telemetry as the policy and environment say and returns
// the function that flushes and stops it (within ShutdownTimeout). When
// telemetry is off it returns a no-op and nil. A setting that cannot work
// (an unknown protocol, an endpoint that is not a URL) is a config.Fatal.
func Setup(o Options) (shutdown func(), err error) {
	plan, err := o.Policy.Resolve(o.Getenv)
	if err != nil || !plan.On {
		return func() {}, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Redact == nil {
		o.Redact, _ = redact.Compile(nil)
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ctx := context.Background()
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(attribute.String("service.version", o.Version)))
	if err != nil && res == nil {
		return func() {}, config.Fatalf("telemetry resource: %v", err)
	}
	if getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		res, _ = resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", o.Service)))
	}
	s := &state{redact: o.Redact, drops: &drops{logger: o.Logger}}
	s.tracer, s.logger = noopTracer, noopLogger
	var shut []func(context.Context) error
	if plan.Traces {
		exp, err := traceExporter(ctx, plan)
		if err != nil {
			return func() {}, config.Fatalf("telemetry traces: %v", err)
		}
		s.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithSpanProcessor(newSpanQueue(exp, s.drops)))
		s.tracer = s.tp.Tracer(scope)
		shut = append(shut, s.tp.Shutdown)
	}
	if plan.Logs {
		exp, err := logExporter(ctx, plan)
		if err != nil {
			return func() {}, config.Fatalf("telemetry logs: %v", err)
		}
		s.lp = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(newLogQueue(exp, s.drops)))
		s.logger = s.lp.Logger(scope)
		shut = append(shut, s.lp.Shutdown)
	}
	var meter metric.Meter
	if plan.Metrics {
		exp, err := metricExporter(ctx, plan)
		if err != nil {
			return func() {}, config.Fatalf("telemetry metrics: %v", err)
		}
		ropts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithTimeout(ExportTimeout)}
		if getenv("OTEL_METRIC_EXPORT_INTERVAL") == "" { // else the SDK reads it
			ropts = append(ropts, sdkmetric.WithInterval(MetricInterval))
		}
		s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(
			sdkmetric.NewPeriodicReader(&countingMetricExporter{Exporter: exp, drops: s.drops}, ropts...)))
		meter = s.mp.Meter(scope)
		shut = append(shut, s.mp.Shutdown)
	}
	s.m = newInstruments(meter)
	s.drops.counter = s.m.dropped
	// The SDK's own errors (a refused export, a full queue) go to the drop
	// counter's one log line, never to stderr once per batch.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { s.drops.say(err) }))
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	s.audits = newAuditQueue(s)
	cur.Store(s)
	o.Logger.Info("telemetry on", "to", plan.String())
	var once sync.Once
	return func() {
		once.Do(func() {
			cur.Store(nil)
			ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			s.audits.close(ctx) // the last records go to the log queue first
			var errs []error
			for _, f := range shut {
				errs = append(errs, f(ctx))
			}
			if err := errors.Join(errs...); err != nil {
				s.drops.say(err)
			}
		})
	}, nil
}

// Enabled reports whether telemetry is on.
func Enabled() bool { return cur.Load() != nil }

// Tracer is the tracer of Bastion's spans (a no-op one when tracing is off).
func Tracer() trace.Tracer {
	if s := cur.Load(); s != nil {
		return s.tracer
	}
	return noopTracer
}

// Span is one step of a request, as Start returns it. Its methods do
// nothing when telemetry is off.
type Span struct{ s trace.Span }

// Start opens a child span named name under the span in ctx (a no-op when
// telemetry is off). Other packages use it to show a step that costs time:
//
//	ctx, span := telemetry.Start(ctx, "sandbox.run", telemetry.String("code", c))
//	defer span.End()
//
// Attributes must hold nothing secret: codes, counts, sizes, names of
// limits; never arguments, paths or output.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, Span) {
	s := cur.Load()
	if s == nil || s.tp == nil {
		return ctx, Span{}
	}
	ctx, sp := s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, Span{sp}
}

// Set adds attributes.
func (s Span) Set(attrs ...attribute.KeyValue) {
	if s.s != nil {
		s.s.SetAttributes(attrs...)
	}
}

// Code records the step's result code: error.type and an error status
// when it is not OK.
func (s Span) Code(code string) {
	if s.s == nil || code == "" || code == "OK" {
		return
	}
	s.s.SetAttributes(attribute.String("error.type", code))
	s.s.SetStatus(2, code) // codes.Error
}

// End ends the span.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// String is an attribute with a string value.
func String(k, v string) attribute.KeyValue { return attribute.String(k, v) }

// Int is an attribute with an integer value.
func Int(k string, v int64) attribute.KeyValue { return attribute.Int64(k, v) }

// Bool is an attribute with a boolean value.
func Bool(k string, v bool) attribute.KeyValue { return attribute.Bool(k, v) }
