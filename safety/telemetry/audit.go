package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
)

// AuditRecord is one record the audit log has written, as safety/audit
// hands it over after the local append succeeded.
type AuditRecord struct {
	Seq    int64
	Prev   string // the previous record's hash
	Hash   string // this record's hash: SHA-256 of Line
	Time   time.Time
	Kind   string // intent, outcome or event
	Server string
	Action string
	Code   string // "" when the record has none
	Fields map[string]any
	Line   []byte // the record's line as the file holds it (no newline)
}

// Audit sends one audit record as an OpenTelemetry log record and counts
// what it says (commands run, limits hit, approvals, bytes reclaimed,
// moves). The caller only queues the record (at most QueueSize wait; past
// that they are dropped and counted): a background worker redacts it,
// builds the log record and counts, so the audit log's next append never
// waits for any of it. The body is the line, redacted with the server's
// secret patterns; bastion.audit.redacted says when that changed it (the
// hash is the original line's, so a backend checks the chain by seq, prev
// and hash).
func Audit(r AuditRecord) {
	s := cur.Load()
	if s == nil {
		return
	}
	s.audits.add(r)
}

// auditQueue holds audit records until the worker sends them.
type auditQueue struct {
	s       *state
	mu      sync.Mutex
	buf     []AuditRecord
	closed  bool
	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

func newAuditQueue(s *state) *auditQueue {
	q := &auditQueue{s: s, kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go q.run()
	return q
}

func (q *auditQueue) add(r AuditRecord) {
	q.mu.Lock()
	if q.closed || len(q.buf) >= QueueSize {
		q.mu.Unlock()
		q.s.drops.add("logs", 1, nil)
		return
	}
	q.buf = append(q.buf, r)
	full := len(q.buf) == QueueSize/4
	q.mu.Unlock()
	if full {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// auditDelay is how long an audit record waits for the worker at most.
const auditDelay = 200 * time.Millisecond

func (q *auditQueue) run() {
	defer close(q.stopped)
	t := time.NewTicker(auditDelay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-q.kick:
		case <-q.done:
			q.drain()
			return
		}
		q.drain()
	}
}

func (q *auditQueue) drain() {
	q.mu.Lock()
	buf := q.buf
	q.buf = nil
	q.mu.Unlock()
	for _, r := range buf {
		q.s.send(r)
	}
}

// close sends what is queued and stops the worker, within ctx.
func (q *auditQueue) close(ctx context.Context) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.mu.Unlock()
	close(q.done)
	select {
	case <-q.stopped:
	case <-ctx.Done():
	}
}

// send counts one record and emits it as a log record.
func (s *state) send(r AuditRecord) {
	ctx := context.Background()
	s.m.records.Add(ctx, 1, metric.WithAttributes(attribute.String("bastion.audit.kind", r.Kind)))
	s.count(ctx, r)
	if s.lp == nil {
		return
	}
	body, n := s.redact.Redact(r.Line)
	var rec log.Record
	rec.SetTimestamp(r.Time)
	rec.SetObservedTimestamp(time.Now())
	rec.SetEventName("bastion.audit." + r.Kind)
	rec.SetSeverity(log.SeverityInfo)
	rec.SetSeverityText("INFO")
	if r.Code != "" && r.Code != "OK" && r.Code != "OUTPUT_TRUNCATED" {
		rec.SetSeverity(log.SeverityWarn)
		rec.SetSeverityText("WARN")
	}
	rec.SetBody(attribute.StringValue(string(body)))
	rec.AddAttributes(
		attribute.Int64("bastion.audit.seq", r.Seq),
		attribute.String("bastion.audit.prev", r.Prev),
		attribute.String("bastion.audit.hash", r.Hash),
		attribute.String("bastion.audit.kind", r.Kind),
		attribute.String("bastion.audit.server", r.Server),
		attribute.String("bastion.audit.action", r.Action),
		attribute.Bool("bastion.audit.redacted", n > 0),
	)
	if r.Code != "" {
		rec.AddAttributes(attribute.String("bastion.audit.code", r.Code))
	}
	s.logger.Emit(ctx, rec)
}

// count derives Bastion's counters from the audit record: every command,
// approval, deletion and move is audited, so counting here sees them all
// without a line in the code that does them.
func (s *state) count(ctx context.Context, r AuditRecord) {
	switch {
	case r.Kind == "event" && r.Action == "approval.decision":
		answer, _ := r.Fields["answer"].(string)
		s.m.approvals.Add(ctx, 1, metric.WithAttributes(attribute.String("bastion.answer", answer)))
	case r.Kind != "outcome":
	case r.Action == "reclaim":
		if b, ok := num(r.Fields["removed_bytes"]); ok && b > 0 {
			s.m.reclaimed.Add(ctx, b)
		}
	case r.Action == "move_file" || r.Action == "apply_plan" || r.Action == "redo_last_action" || r.Action == "undo_last_action":
		if r.Code != "OK" {
			return
		}
		n, ok := num(r.Fields["moved"])
		if !ok {
			n = 1
		}
		op := "applied"
		if r.Action == "undo_last_action" {
			op = "undone"
		}
		s.m.moves.Add(ctx, n, metric.WithAttributes(attribute.String("bastion.op", op)))
	default:
		if _, ok := r.Fields["exit_code"]; ok {
			s.m.commands.Add(ctx, 1, metric.WithAttributes(attribute.String("error.type", r.Code)))
			if l, _ := r.Fields["limit"].(string); l != "" {
				s.m.limits.Add(ctx, 1, metric.WithAttributes(attribute.String("bastion.limit", l)))
			}
		}
	}
}

// num reads an integer field as it was put in the record's map.
func num(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}
