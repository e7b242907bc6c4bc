package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/bastion-mcp/bastion/safety/config"
)

// The exporters are the SDK's OTLP exporters; they read the standard
// environment (headers, TLS, compression, per-signal endpoints) themselves.
// An endpoint from the policy is passed as a URL; one from the environment
// is left for the exporter to read. Retries are short: a Collector that
// stays down loses telemetry instead of holding the queue.

func traceExporter(ctx context.Context, p config.TelemetryPlan) (sdktrace.SpanExporter, error) {
	if p.Protocol == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(ExportTimeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: BatchDelay, MaxInterval: ExportTimeout, MaxElapsedTime: ExportTimeout})}
		if fromPolicy(p) {
			opts = append(opts, otlptracegrpc.WithEndpointURL(p.Endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(ExportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: BatchDelay, MaxInterval: ExportTimeout, MaxElapsedTime: ExportTimeout})}
	if fromPolicy(p) {
		opts = append(opts, otlptracehttp.WithEndpointURL(signalURL(p.Endpoint, "traces")))
	}
	return otlptracehttp.New(ctx, opts...)
}

func metricExporter(ctx context.Context, p config.TelemetryPlan) (sdkmetric.Exporter, error) {
	if p.Protocol == "grpc" {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithTimeout(ExportTimeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: BatchDelay, MaxInterval: ExportTimeout, MaxElapsedTime: ExportTimeout})}
		if fromPolicy(p) {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(p.Endpoint))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithTimeout(ExportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: BatchDelay, MaxInterval: ExportTimeout, MaxElapsedTime: ExportTimeout})}
	if fromPolicy(p) {
		opts = append(opts, otlpmetrichttp.WithEndpointURL(signalURL(p.Endpoint, "metrics")))
	}
	return otlpmetrichttp.New(ctx, opts...)
}

func logExporter(ctx context.Context, p config.TelemetryPlan) (sdklog.Exporter, error) {
	if p.Protocol == "grpc" {
		opts := []otlploggrpc.Option{otlploggrpc.WithTimeout(ExportTimeout),
			otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: true, InitialInterval: BatchDelay, MaxInterval: ExportTimeout, MaxElapsedTime: ExportTimeout})}
		if fromPolicy(p) {
			opts = append(opts, otlploggrpc.WithEndpointURL(p.Endpoint))
		}
		return otlploggrpc.New(ctx, opts...)
	}
	opts := []otlploghttp.Option{otlploghttp.WithTimeout(ExportTimeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: true, InitialInterval: BatchDelay, MaxInterval: ExportTimeout, MaxElapsedTime: ExportTimeout})}
	if fromPolicy(p) {
		opts = append(opts, otlploghttp.WithEndpointURL(signalURL(p.Endpoint, "logs")))
	}
	return otlploghttp.New(ctx, opts...)
}

// signalURL is an OTLP/HTTP signal's URL under the base URL ep, as the
// exporters build it from OTEL_EXPORTER_OTLP_ENDPOINT.
func signalURL(ep, signal string) string { return strings.TrimRight(ep, "/") + "/v1/" + signal }

// fromPolicy reports whether the endpoint is the policy's (the exporter
// reads an environment endpoint itself, with its per-signal paths).
func fromPolicy(p config.TelemetryPlan) bool {
	return p.Endpoint != "" && p.Why == "[telemetry] enabled"
}

// drops counts what could not be sent and says so once in the server log.
type drops struct {
	logger  *slog.Logger
	once    sync.Once
	counter metric.Int64Counter
}

// add counts n items of signal as dropped.
func (d *drops) add(signal string, n int, err error) {
	if n <= 0 {
		return
	}
	if d.counter != nil {
		d.counter.Add(context.Background(), int64(n), metric.WithAttributes(attribute.String("signal", signal)))
	}
	d.say(err)
}

// say writes the one log line.
func (d *drops) say(err error) {
	d.once.Do(func() {
		reason := "the queue is full"
		if err != nil {
			reason = err.Error()
		}
		d.logger.Warn("telemetry is being dropped: the OpenTelemetry Collector cannot take it; tool calls and the local audit log are not affected (said once; bastion.telemetry.dropped counts it)", "reason", reason)
	})
}

// spanQueue is the batch span processor: it keeps at most QueueSize ended
// spans in a slice and a background worker hands them to the OTLP exporter
// every BatchDelay (or as soon as a batch is full). Unlike the SDK's batch
// processor it wakes no goroutine per span, which on a busy machine costs
// a tool call a context switch. A span past the bound is counted as
// dropped.
type spanQueue struct {
	exp   sdktrace.SpanExporter
	drops *drops

	mu      sync.Mutex
	buf     []sdktrace.ReadOnlySpan
	closed  bool
	kick    chan struct{}
	done    chan struct{}      // closed by Shutdown
	stopped chan struct{}      // closed by run after its last export
	flush   chan chan struct{} // ForceFlush's requests
}

// spanBatch is how many spans one export carries at most.
const spanBatch = 512

func newSpanQueue(exp sdktrace.SpanExporter, d *drops) sdktrace.SpanProcessor {
	q := &spanQueue{exp: exp, drops: d, kick: make(chan struct{}, 1), done: make(chan struct{}),
		stopped: make(chan struct{}), flush: make(chan chan struct{})}
	go q.run()
	return q
}

func (q *spanQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (q *spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	q.mu.Lock()
	if q.closed || len(q.buf) >= QueueSize {
		q.mu.Unlock()
		q.drops.add("traces", 1, nil)
		return
	}
	q.buf = append(q.buf, s)
	full := len(q.buf) == spanBatch
	q.mu.Unlock()
	if full {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// run exports what has queued up every BatchDelay, when a batch is full,
// and when asked to flush; it ends after the last export at Shutdown.
func (q *spanQueue) run() {
	defer close(q.stopped)
	t := time.NewTicker(BatchDelay)
	defer t.Stop()
	for {
		var ack chan struct{}
		select {
		case <-t.C:
		case <-q.kick:
		case ack = <-q.flush:
		case <-q.done:
			q.export()
			return
		}
		q.export()
		if ack != nil {
			close(ack)
		}
	}
}

// export sends everything queued, in batches, each within ExportTimeout.
func (q *spanQueue) export() {
	q.mu.Lock()
	buf := q.buf
	q.buf = nil
	q.mu.Unlock()
	for len(buf) > 0 {
		n := min(len(buf), spanBatch)
		ctx, cancel := context.WithTimeout(context.Background(), ExportTimeout)
		if err := q.exp.ExportSpans(ctx, buf[:n]); err != nil {
			q.drops.add("traces", n, err)
		}
		cancel()
		buf = buf[n:]
	}
}

func (q *spanQueue) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-q.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *spanQueue) Shutdown(ctx context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.mu.Unlock()
	close(q.done)
	select { // run's last export, each batch within ExportTimeout
	case <-q.stopped:
	case <-ctx.Done():
	}
	return q.exp.Shutdown(ctx)
}

// logQueue is spanQueue for log records.
type logQueue struct {
	next    sdklog.Processor
	pending *atomic.Int64
	drops   *drops
}

func newLogQueue(exp sdklog.Exporter, d *drops) sdklog.Processor {
	pending := new(atomic.Int64)
	bp := sdklog.NewBatchProcessor(&countingLogExporter{Exporter: exp, pending: pending, drops: d},
		sdklog.WithMaxQueueSize(QueueSize), sdklog.WithExportInterval(BatchDelay), sdklog.WithExportTimeout(ExportTimeout))
	return &logQueue{next: bp, pending: pending, drops: d}
}

func (q *logQueue) Enabled(ctx context.Context, p sdklog.EnabledParameters) bool { return true }

func (q *logQueue) OnEmit(ctx context.Context, r *sdklog.Record) error {
	if q.pending.Add(1) > QueueSize {
		q.pending.Add(-1)
		q.drops.add("logs", 1, nil)
		return nil
	}
	return q.next.OnEmit(ctx, r)
}

func (q *logQueue) Shutdown(ctx context.Context) error   { return q.next.Shutdown(ctx) }
func (q *logQueue) ForceFlush(ctx context.Context) error { return q.next.ForceFlush(ctx) }

type countingLogExporter struct {
	sdklog.Exporter
	pending *atomic.Int64
	drops   *drops
}

func (e *countingLogExporter) Export(ctx context.Context, records []sdklog.Record) error {
	e.pending.Add(-int64(len(records)))
	err := e.Exporter.Export(ctx, records)
	if err != nil {
		e.drops.add("logs", len(records), err)
	}
	return err
}

// countingMetricExporter counts the data points of a failed export.
type countingMetricExporter struct {
	sdkmetric.Exporter
	drops *drops
}

func (e *countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	if err != nil {
		n := 0
		for _, sm := range rm.ScopeMetrics {
			n += len(sm.Metrics)
		}
		e.drops.add("metrics", n, err)
	}
	return err
}
