package storeotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// ScopeName is the instrumentation scope of the spans and the histogram.
const ScopeName = "github.com/idemcoord/idemcoord/store/storeotel"

// DurationBuckets are the db.client.operation.duration histogram's bucket
// boundaries in seconds, the semantic conventions' advice: a claim takes
// a few milliseconds, a call retried under contention up to seconds.
var DurationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// Config says where the spans and the histogram go and what the database
// is.
type Config struct {
	// TracerProvider receives the client spans. nil, or a
	// noop.TracerProvider: no spans.
	TracerProvider trace.TracerProvider
	// Meter records db.client.operation.duration. nil: no histogram.
	Meter metric.Meter
	// System is db.system.name. Default: the store's own (Describer),
	// else "postgresql".
	System string
	// Namespace is db.namespace (the database name). Default: the store's
	// own (Describer), else none.
	Namespace string
}

// Describer is what a backend may say of its database: the
// db.system.name ("postgresql", "cockroachdb") and the db.namespace.
// *sqlstore.Store implements it.
type Describer interface {
	DBSystem() string
	DBNamespace() string
}

// Store is a store.Store whose every call is a database client span and
// a histogram observation. Its methods are st's, traced.
type Store struct {
	st     store.Store
	tracer trace.Tracer            // nil: no spans
	hist   metric.Float64Histogram // nil: no histogram
	base   []attribute.KeyValue    // db.system.name, db.namespace
	ops    [numOps]opInfo
}

var _ store.Store = (*Store)(nil)

// opInfo is one operation's span name and attributes, built once.
type opInfo struct {
	spanName string
	// childOnly: no span unless the call is inside one (a periodic scan,
	// a probe or a fence read makes no trace of its own).
	childOnly bool
	attrs     []attribute.KeyValue    // base and db.operation.name
	start     []trace.SpanStartOption // client kind and attrs
	ok        []metric.RecordOption   // attrs, as a set
}

// New returns st decorated. Its error is the meter's, creating the
// histogram.
func New(st store.Store, cfg Config) (*Store, error) {
	if d, ok := st.(Describer); ok {
		if cfg.System == "" {
			cfg.System = d.DBSystem()
		}
		if cfg.Namespace == "" {
			cfg.Namespace = d.DBNamespace()
		}
	}
	if cfg.System == "" {
		cfg.System = semconv.DBSystemNamePostgreSQL.Value.AsString()
	}
	s := &Store{st: st, base: []attribute.KeyValue{semconv.DBSystemNameKey.String(cfg.System)}}
	if cfg.Namespace != "" {
		s.base = append(s.base, semconv.DBNamespace(cfg.Namespace))
	}
	if tp := cfg.TracerProvider; tp != nil {
		if _, off := tp.(noop.TracerProvider); !off {
			s.tracer = tp.Tracer(ScopeName)
		}
	}
	if cfg.Meter != nil {
		h, err := dbconv.NewClientOperationDuration(cfg.Meter, metric.WithExplicitBucketBoundaries(DurationBuckets...))
		if err != nil {
			return nil, err
		}
		s.hist = h.Inst()
	}
	for op := range numOps {
		name := opNames[op]
		attrs := append(append([]attribute.KeyValue{}, s.base...), semconv.DBOperationName(name))
		span := name
		if cfg.Namespace != "" {
			span += " " + cfg.Namespace // {db.operation.name} {target}
		}
		s.ops[op] = opInfo{spanName: span, attrs: attrs, childOnly: childOnly[op],
			start: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)},
			ok:    []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}}
	}
	return s, nil
}

// Unwrap returns the decorated store.
func (s *Store) Unwrap() store.Store { return s.st }

// call is one store call under way.
type call struct {
	op    op
	start time.Time
	span  trace.Span // nil: not traced
}

// recording reports whether the call's span takes attributes.
func (c call) recording() bool { return c.span != nil && c.span.IsRecording() }

// begin starts op's call: its clock and, when traced, its span in ctx.
func (s *Store) begin(ctx context.Context, op op) (context.Context, call) {
	c := call{op: op, start: time.Now()}
	if s.tracer != nil && !untraced(ctx) && (!s.ops[op].childOnly || trace.SpanFromContext(ctx) != noSpan) {
		ctx, c.span = s.tracer.Start(ctx, s.ops[op].spanName, s.ops[op].start...)
	}
	return ctx, c
}

// end ends c with the call's error: the histogram's observation, and the
// span's error attributes and status.
func (s *Store) end(ctx context.Context, c call, err error) {
	failed := err != nil && !errors.Is(err, store.ErrNotFound)
	var errAttrs []attribute.KeyValue
	if failed {
		errType, code := ErrorType(err)
		errAttrs = append(errAttrs, semconv.ErrorTypeKey.String(errType))
		if code != "" {
			errAttrs = append(errAttrs, semconv.DBResponseStatusCode(code))
		}
	}
	if s.hist != nil {
		d := time.Since(c.start).Seconds()
		if !failed {
			s.hist.Record(ctx, d, s.ops[c.op].ok...)
		} else {
			attrs := append(append([]attribute.KeyValue{}, s.ops[c.op].attrs...), errAttrs...)
			s.hist.Record(ctx, d, metric.WithAttributes(attrs...))
		}
	}
	if c.span == nil {
		return
	}
	if failed && c.span.IsRecording() {
		c.span.SetAttributes(errAttrs...)
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, errAttrs[0].Value.AsString())
	}
	c.span.End()
}

// ErrorType classifies a store call's error as error.type, and returns
// the SQLSTATE of the database's answer when the error carries one (then
// both are that SQLSTATE, as the conventions ask). Without one it is a
// short name of the store's typed errors (contention, unavailable,
// ambiguous_commit, lost_ownership, stale_epoch, ...), else the error's
// Go type.
func ErrorType(err error) (errType, sqlState string) {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) && pg.SQLState() != "" {
		return pg.SQLState(), pg.SQLState()
	}
	switch {
	case errors.As(err, new(*store.AmbiguousCommitError)):
		return "ambiguous_commit", ""
	case errors.Is(err, store.ErrContention):
		return "contention", ""
	case errors.Is(err, store.ErrUnavailable):
		return "unavailable", ""
	case errors.Is(err, store.ErrLostOwnership):
		return "lost_ownership", ""
	case errors.As(err, new(*fencing.StaleEpochError)):
		return "stale_epoch", ""
	case errors.As(err, new(*fencing.MoveConflictError)):
		return "move_conflict", ""
	case errors.Is(err, store.ErrNotUnknown):
		return "not_unknown", ""
	case errors.Is(err, store.ErrNotCancellable):
		return "not_cancellable", ""
	case errors.Is(err, store.ErrNotBootstrapped):
		return "not_bootstrapped", ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", ""
	case errors.Is(err, context.Canceled):
		return "canceled", ""
	}
	return semconv.ErrorType(err).Value.AsString(), ""
}

// untraced reports whether ctx is outside any trace: it carries a span
// that neither records nor has a valid context (a provider that records
// nothing, a client that sent no traceparent). A child would record
// nothing either, so no span is made (the gateway's decorators do the
// same). A context without a span is not untraced: the provider decides,
// as for a root span.
func untraced(ctx context.Context) bool {
	sp := trace.SpanFromContext(ctx)
	return sp != noSpan && !sp.IsRecording() && !sp.SpanContext().IsValid()
}

// noSpan is what trace.SpanFromContext returns for a context without a
// span.
var noSpan = trace.SpanFromContext(context.Background())
