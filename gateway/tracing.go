package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/internal/idemconv"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storeotel"
)

// Span names and attributes. The request's server span is named
// "{method} {route}" (the endpoint's configured route template; the
// method alone for a request no endpoint matched) and carries the HTTP
// semantic conventions' attributes; every store call is a database client
// span (store/storeotel). The idemcoord-specific attributes are under the
// idemcoord. namespace (internal/idemconv): the endpoint, the operation
// id, the decision; never the raw key, a body or a token.
const (
	SpanUpstream = "idemcoord.upstream"

	AttrEndpoint    = string(idemconv.Endpoint)
	AttrOperationID = string(idemconv.OperationID)
	AttrDecision    = string(idemconv.Decision)
	AttrResult      = string(idemconv.Result)
	AttrState       = string(idemconv.State)
	AttrRegion      = string(idemconv.Region)
)

// tracerName is the instrumentation scope of the gateway's spans.
const tracerName = "github.com/idemcoord/idemcoord/gateway"

// propagator reads a client's W3C traceparent and writes the upstream's.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// traceRequests wraps the request handler in a server span that continues
// the client's trace (W3C traceparent), named and attributed by the HTTP
// semantic conventions, and observes http.server.request.duration (with
// tracing off too). Under the no-op provider (idemd with tracing off)
// there is no span to make, as decorate leaves the executor.
func (g *Gateway) traceRequests(next http.Handler) http.Handler {
	routes := newServerRoutes(g.cfg.Endpoints)
	_, off := g.cfg.TracerProvider.(noop.TracerProvider)
	region := idemconv.Region.String(g.cfg.Region)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rt := routes.of(g.router, r.Method, r.URL.Path)
		sw := newStatusWriter(w)
		defer sw.free()
		if off {
			next.ServeHTTP(sw, r)
			g.metrics.served(r.Context(), rt, r, sw.status, start)
			return
		}
		ctx := propagator.Extract(r.Context(), headerCarrier(r.Header))
		ctx, span := g.tracer.Start(ctx, rt.span, serverSpan, rt.start)
		defer span.End()
		recording := span.IsRecording()
		if recording {
			span.SetAttributes(requestAttributes(r, rt, region)...)
		}
		next.ServeHTTP(sw, r.WithContext(ctx))
		if recording {
			span.SetAttributes(semconv.HTTPResponseStatusCode(sw.status))
			if sw.status >= 500 {
				span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(sw.status)))
				span.SetStatus(codes.Error, http.StatusText(sw.status))
			}
		}
		g.metrics.served(ctx, rt, r, sw.status, start)
	})
}

// serverSpan is the request span's kind, made once.
var serverSpan = trace.WithSpanKind(trace.SpanKindServer)

// headerCarrier is propagation.HeaderCarrier that finds the propagator's
// own headers (traceparent, tracestate, baggage) under their canonical
// names without canonicalising them anew on every request: the same
// lookups, without an allocation each.
type headerCarrier http.Header

// canonicalTraceHeader is the canonical form of a header the propagator
// reads or writes, "" for another.
func canonicalTraceHeader(key string) string {
	switch key {
	case "traceparent":
		return "Traceparent"
	case "tracestate":
		return "Tracestate"
	case "baggage":
		return "Baggage"
	}
	return ""
}

// Get returns the first value of key.
func (c headerCarrier) Get(key string) string {
	if k := canonicalTraceHeader(key); k != "" {
		if vs := c[k]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	return propagation.HeaderCarrier(c).Get(key)
}

// Values returns every value of key.
func (c headerCarrier) Values(key string) []string {
	if k := canonicalTraceHeader(key); k != "" {
		return c[k]
	}
	return propagation.HeaderCarrier(c).Values(key)
}

// Set sets key's value.
func (c headerCarrier) Set(key, value string) { propagation.HeaderCarrier(c).Set(key, value) }

// Keys lists the header names.
func (c headerCarrier) Keys() []string { return propagation.HeaderCarrier(c).Keys() }

// Pass is the executor's Pass; the upstream continues the request span.
func (e tracedExecutor) Pass(w http.ResponseWriter, r *http.Request) {
	injectTrace(r)
	e.Executor.Pass(w, r)
}

// injectTrace sets r's traceparent to the span in r's context, when that
// span is recorded; otherwise the client's own header goes on unchanged.
func injectTrace(r *http.Request) {
	if trace.SpanFromContext(r.Context()).SpanContext().IsValid() {
		propagator.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
}

// The pipeline's store and executor calls are decorated, not detoured
// through: New wraps the store and the executor the pipeline calls
// (Gateway.store, Gateway.next), and the pipeline code (coordinate.go,
// run.go, record.go, the passthrough) calls them as it would call the
// bare ones. Every store call is a database client span and an
// observation of db.client.operation.duration (storeotel); the claim also
// puts its decision on the request span (tracedStore); the upstream call
// (Execute) and the passthrough (Pass, which carries the request span on)
// are the executor's (tracedExecutor).

// decorate returns the store and executor the pipeline calls: st as
// storeotel's database client calls (spans under tp, the histogram on
// meter), and, unless tp is the no-op provider (idemd with tracing off),
// with the claim's decision on the request span and next with the
// upstream span. With tracing off the executor is next as it is: its
// spans would record nothing and only carry the client's trace context
// on, which the bare executor sends upstream with the client's other
// headers anyway.
func decorate(tp trace.TracerProvider, meter metric.Meter, tracer trace.Tracer, st store.Store, next Executor) (store.Store, Executor, error) {
	ost, err := storeotel.New(st, storeotel.Config{TracerProvider: tp, Meter: meter})
	if err != nil {
		return nil, nil, err
	}
	if _, off := tp.(noop.TracerProvider); off {
		return ost, next, nil
	}
	return tracedStore{ost}, tracedExecutor{next, tracer}, nil
}

// untraced reports whether ctx is outside any trace: it carries a span
// that is not recording and has no valid context. That is a request span
// of a provider that records nothing (the global provider before one is
// set, which gateway.New takes by default), for a client that sent no
// traceparent. A child of it records nothing either, and there is no trace
// context to send upstream, so the decorators call straight through: no
// span, no attributes (an operation id formatted per span), no context. A
// provider that records spans gives every span a valid context, sampled or
// not, and a client's traceparent makes the context valid too: both keep
// the spans. A context without any span (a run outside a request: async
// work recovered or taken over) is not untraced: the provider decides, as
// for a root span.
func untraced(ctx context.Context) bool {
	s := trace.SpanFromContext(ctx)
	return s != noSpan && !s.IsRecording() && !s.SpanContext().IsValid()
}

// noSpan is what trace.SpanFromContext returns for a context without a
// span.
var noSpan = trace.SpanFromContext(context.Background())

// tracedStore is storeotel's store whose Begin also puts the claim's
// decision and operation id on the request span.
type tracedStore struct {
	store.Store
}

// Begin is the store's Begin (a claim client span, storeotel's); the
// decision and operation id go on the request span too.
func (s tracedStore) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	claim, err := s.Store.Begin(ctx, req)
	if parent := trace.SpanFromContext(ctx); err == nil && parent.IsRecording() {
		parent.SetAttributes(attribute.String(AttrDecision, claim.Outcome.String()),
			attribute.String(AttrOperationID, claim.Record.OperationID.String()))
	}
	return claim, err
}

// traceDecision sets decision on the request span in ctx, when it records:
// an answer decided without a claim (a waiter replaying the record its
// watch read) is traced as the claim would have been.
func traceDecision(ctx context.Context, decision store.Outcome) {
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(attribute.String(AttrDecision, decision.String()))
	}
}

// tracedExecutor is an executor whose Execute runs in a client span, and
// whose context goes to the upstream as its traceparent; Pass sends the
// request span's. Resolve is the executor's own.
type tracedExecutor struct {
	Executor
	tracer trace.Tracer
}

// Execute is the executor's Execute in an upstream span.
func (e tracedExecutor) Execute(ctx context.Context, in Invocation) Answer {
	if untraced(ctx) {
		return e.Executor.Execute(ctx, in)
	}
	ctx, span := e.tracer.Start(ctx, SpanUpstream, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String(AttrEndpoint, in.Endpoint.Name),
			attribute.String(AttrOperationID, in.OperationIDText())))
	defer span.End()
	if span.SpanContext().IsValid() {
		r := *in.Request
		r.Header = in.Request.Header.Clone()
		propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
		in.Request = &r
	}
	a := e.Executor.Execute(ctx, in)
	if a.Err != nil {
		span.RecordError(exchange.Redact(a.Err))
		span.SetStatus(codes.Error, "upstream call failed")
	} else {
		span.SetAttributes(semconv.HTTPResponseStatusCode(a.Status))
	}
	return a
}

// statusWriter remembers the status written; Unwrap keeps
// http.ResponseController (flush, deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

// statusWriters are the request spans' writers, reused: one per request
// would be an allocation of every request's.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// newStatusWriter returns a writer for w from the pool; free returns it
// once the handler has returned (nothing writes to w after that).
func newStatusWriter(w http.ResponseWriter) *statusWriter {
	sw := statusWriters.Get().(*statusWriter)
	*sw = statusWriter{ResponseWriter: w, status: http.StatusOK}
	return sw
}

// free puts w back in the pool.
func (w *statusWriter) free() {
	*w = statusWriter{}
	statusWriters.Put(w)
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		w.wrote = true
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
