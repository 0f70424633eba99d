// Package tracelog puts the active span's trace_id and span_id on log
// records: a slog.Handler wrapper, so a log line found in the logs leads to
// its trace and back. Only a record logged with a context (the
// slog.*Context calls) can carry them: a span lives in a context.
package tracelog

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// The attribute names, as the OpenTelemetry log data model and its
// JSON/text mappings spell them.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// Handler is a slog.Handler that adds TraceIDKey and SpanIDKey (lower-case
// hex) to every record logged with a context whose span context is valid,
// then hands the record to the handler it wraps. A record without one goes
// on as it is. Under a group (WithGroup), the two are in the group, as
// every attribute added there is.
type Handler struct {
	next slog.Handler
}

var _ slog.Handler = (*Handler)(nil)

// Wrap returns h with trace ids added; h itself when it is a *Handler
// already.
func Wrap(h slog.Handler) slog.Handler {
	if _, ok := h.(*Handler); ok {
		return h
	}
	return &Handler{next: h}
}

// Enabled is the wrapped handler's.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle adds the trace and span ids of ctx's span, when valid, and hands
// r on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone() // the caller's record keeps its attributes
		r.AddAttrs(slog.String(TraceIDKey, sc.TraceID().String()), slog.String(SpanIDKey, sc.SpanID().String()))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs wraps the wrapped handler's.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs)}
}

// WithGroup wraps the wrapped handler's.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}
