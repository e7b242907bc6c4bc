package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// Metric names. The first is the MCP semantic convention's; the rest are
// Bastion's own (docs/telemetry.md lists their attributes).
const (
	MetricOperationDuration = "mcp.server.operation.duration"
	MetricRefusals          = "bastion.refusals"
	MetricApprovals         = "bastion.approvals"
	MetricCommands          = "bastion.commands"
	MetricLimits            = "bastion.limits"
	MetricReclaimedBytes    = "bastion.reclaimed.bytes"
	MetricMoves             = "bastion.moves"
	MetricAuditRecords      = "bastion.audit.records"
	MetricAuditFailures     = "bastion.audit.failures"
	MetricDropped           = "bastion.telemetry.dropped"
)

type instruments struct {
	duration   metric.Float64Histogram
	refusals   metric.Int64Counter
	approvals  metric.Int64Counter
	commands   metric.Int64Counter
	limits     metric.Int64Counter
	reclaimed  metric.Int64Counter
	moves      metric.Int64Counter
	records    metric.Int64Counter
	auditFails metric.Int64Counter
	dropped    metric.Int64Counter
}

func newInstruments(m metric.Meter) *instruments {
	if m == nil {
		m = metricnoop.NewMeterProvider().Meter(scope)
	}
	i := &instruments{}
	i.duration, _ = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of one MCP request as the server saw it."),
		metric.WithExplicitBucketBoundaries(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 300))
	c := func(name, unit, desc string) metric.Int64Counter {
		ctr, _ := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return ctr
	}
	i.refusals = c(MetricRefusals, "{refusal}", "Tool calls answered with a refusal, by result code and rule.")
	i.approvals = c(MetricApprovals, "{answer}", "Questions to the person, by answer.")
	i.commands = c(MetricCommands, "{command}", "Commands terminald ran, by result code.")
	i.limits = c(MetricLimits, "{command}", "Commands stopped by a limit, by limit.")
	i.reclaimed = c(MetricReclaimedBytes, "By", "Bytes sweepd deleted.")
	i.moves = c(MetricMoves, "{move}", "Moves organizerd applied or undid, by op.")
	i.records = c(MetricAuditRecords, "{record}", "Audit records written to the local log.")
	i.auditFails = c(MetricAuditFailures, "{failure}", "Audit records that could not be written.")
	i.dropped = c(MetricDropped, "{item}", "Spans, log records and metric batches that could not be sent, by signal.")
	return i
}

// Operation records one MCP request in mcp.server.operation.duration:
// method, tool (for tools/call) and the result code ("" for a success
// that is not a tool call).
func Operation(method, tool, code string, d time.Duration) {
	s := cur.Load()
	if s == nil {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attribute.String("mcp.method.name", method))
	if tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool))
	}
	if code != "" {
		attrs = append(attrs, attribute.String("error.type", code))
	}
	s.m.duration.Record(context.Background(), d.Seconds(), metric.WithAttributes(attrs...))
}

// Refusal counts one refused tool call by code and, when the refusal
// names one, the policy rule.
func Refusal(tool, code, rule string) {
	s := cur.Load()
	if s == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.tool.name", tool), attribute.String("error.type", code)}
	if rule != "" {
		attrs = append(attrs, attribute.String("bastion.rule", rule))
	}
	s.m.refusals.Add(context.Background(), 1, metric.WithAttributes(attrs...))
}

// AuditFailure counts an audit record that could not be written.
func AuditFailure(action string) {
	if s := cur.Load(); s != nil {
		s.m.auditFails.Add(context.Background(), 1, metric.WithAttributes(attribute.String("bastion.audit.action", action)))
	}
}
