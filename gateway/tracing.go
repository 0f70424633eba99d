package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemcoord/idemcoord/store"
)

// Span names and attributes. Spans carry the endpoint, the operation id
// and the decision; never the raw key, a body or a token.
const (
	SpanRequest  = "idemcoord.request"
	SpanClaim    = "idemcoord.claim"
	SpanUpstream = "idemcoord.upstream"
	SpanFinish   = "idemcoord.finish"

	AttrEndpoint    = "idemcoord.endpoint"
	AttrOperationID = "idemcoord.operation_id"
	AttrDecision    = "idemcoord.decision"
	AttrResult      = "idemcoord.result"
	AttrState       = "idemcoord.state"
)

// tracerName is the instrumentation scope of the gateway's spans.
const tracerName = "github.com/idemcoord/idemcoord/gateway"

// propagator reads a client's W3C traceparent and writes the upstream's.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// traceRequests wraps the request handler in a server span that continues
// the client's trace (W3C traceparent) and records the answer's status.
// Under the no-op provider (idemd with tracing off) there is no span to
// make: next is served as it is, as decorate leaves the store and the
// executor.
func (g *Gateway) traceRequests(next http.Handler) http.Handler {
	if _, off := g.cfg.TracerProvider.(noop.TracerProvider); off {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), headerCarrier(r.Header))
		ctx, span := g.tracer.Start(ctx, SpanRequest, serverSpan, methodAttribute(r.Method))
		defer span.End()
		if !span.IsRecording() {
			// Nothing to record the status on (a span never starts
			// recording later); the span still goes down in the context.
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// serverSpan is the request span's kind, made once.
var serverSpan = trace.WithSpanKind(trace.SpanKindServer)

// methodAttributes are the request span's method attribute of the common
// methods, made once.
var methodAttributes = func() map[string]trace.SpanStartEventOption {
	m := map[string]trace.SpanStartEventOption{}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		m[method] = trace.WithAttributes(attribute.String("http.request.method", method))
	}
	return m
}()

// methodAttribute is the request span's method attribute.
func methodAttribute(method string) trace.SpanStartEventOption {
	if o, ok := methodAttributes[method]; ok {
		return o
	}
	return trace.WithAttributes(attribute.String("http.request.method", method))
}

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
// (Gateway.store, Gateway.next) in tracedStore and tracedExecutor (see
// decorate: not with the no-op provider), and the pipeline code
// (coordinate.go, run.go, record.go, the passthrough) calls them as it
// would call the bare ones. Only the calls that make a request's span tree
// are decorated: the claim (Begin), the upstream call (Execute), the
// result's finish (Finish) and the passthrough (Pass, which carries the
// request span on); other calls go to Config.Store and Config.Next as they
// are.

// decorate returns the store and executor the pipeline calls: st and next
// with the pipeline's spans, or as they are when tp is the no-op provider
// (idemd with tracing off), whose spans would record nothing and only
// carry the client's trace context on, which the bare executor sends
// upstream with the client's other headers anyway.
func decorate(tp trace.TracerProvider, tracer trace.Tracer, st store.Store, next Executor) (store.Store, Executor) {
	if _, off := tp.(noop.TracerProvider); off {
		return st, next
	}
	return tracedStore{st, tracer}, tracedExecutor{next, tracer}
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

// tracedStore is a store whose Begin and Finish run in the claim and
// finish spans. Everything else is the store's own.
type tracedStore struct {
	store.Store
	tracer trace.Tracer
}

// Begin is the store's Begin in a claim span; the decision and operation
// id go on it and on the request span.
func (s tracedStore) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	if untraced(ctx) {
		return s.Store.Begin(ctx, req)
	}
	parent := trace.SpanFromContext(ctx)
	ctx, span := s.tracer.Start(ctx, SpanClaim, trace.WithAttributes(attribute.String(AttrEndpoint, req.Scope.Endpoint)))
	defer span.End()
	claim, err := s.Store.Begin(ctx, req)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "claim failed")
		return claim, err
	}
	if span.IsRecording() || parent.IsRecording() {
		attrs := []attribute.KeyValue{attribute.String(AttrDecision, claim.Outcome.String()),
			attribute.String(AttrOperationID, claim.Record.OperationID.String())}
		span.SetAttributes(attrs...)
		parent.SetAttributes(attrs...)
	}
	return claim, nil
}

// traceDecision sets decision on the request span in ctx, when it records:
// an answer decided without a claim (a waiter replaying the record its
// watch read) is traced as the claim would have been.
func traceDecision(ctx context.Context, decision store.Outcome) {
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(attribute.String(AttrDecision, decision.String()))
	}
}

// Finish is the store's Finish in a finish span.
func (s tracedStore) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	if untraced(ctx) {
		return s.Store.Finish(ctx, l, res)
	}
	ctx, span := s.tracer.Start(ctx, SpanFinish, trace.WithAttributes(
		attribute.String(AttrOperationID, l.OperationID.String()), attribute.String(AttrState, string(res.State))))
	defer span.End()
	err := s.Store.Finish(ctx, l, res)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "finish failed")
	}
	return err
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
			attribute.String(AttrOperationID, in.operationID())))
	defer span.End()
	if span.SpanContext().IsValid() {
		r := *in.Request
		r.Header = in.Request.Header.Clone()
		propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
		in.Request = &r
	}
	a := e.Executor.Execute(ctx, in)
	if a.Err != nil {
		span.RecordError(redact(a.Err))
		span.SetStatus(codes.Error, "upstream call failed")
	} else {
		span.SetAttributes(attribute.Int("http.response.status_code", a.Status))
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
