package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemcoord/idemcoord/idempotency"
)

// unmatchedEndpoint is the endpoint label of a request that matched no
// configured endpoint (passed through uncoordinated).
const unmatchedEndpoint = "(unmatched)"

// requestResults are the results idemcoord_http_requests_total is
// exported with at zero, per endpoint, from the start: the claim
// decisions, then the answers given without one.
var requestResults = []string{
	"first_run", "replay", "fingerprint_conflict", "in_progress", "takeover", "outcome_unknown",
	"async_accepted", "passthrough", "forwarded", "redirected",
	"store_unavailable", "region_unavailable", "region_unreachable", "ownership_moving", "ownership_unknown",
	"misrouted", "forward_answer_lost", "ownership_moved", "result_unrecorded", "contention", "overloaded", "shutting_down",
	"invalid_key", "missing_key", "unauthorized", "body_too_large", "malformed_body", "unsupported_media_type",
	"fingerprint_busy",
}

// upstreamStates are the states idemcoord_upstream_results_total is
// exported with at zero.
var upstreamStates = []idempotency.State{idempotency.Completed, idempotency.RetryableFailure,
	idempotency.TerminalFailure, idempotency.OutcomeUnknown}

// metrics are the gateway's instruments. Together with the store's
// (idemcoord.decisions, idemcoord.fenced_writes_rejected, ...) they count
// every outcome of the protocol.
type metrics struct {
	cancels  metric.Int64Counter
	requests metric.Int64Counter
	upstream metric.Int64Counter
	latency  metric.Float64Histogram
	// server is http.server.request.duration (the HTTP semantic
	// conventions; Prometheus http_server_request_duration_seconds), by
	// method, route, scheme and status; its attribute sets are built once
	// per combination seen (serverSets, under serverMu).
	server     metric.Float64Histogram
	serverMu   sync.RWMutex
	serverSets map[serverKey][]metric.RecordOption
	// sets are the attribute sets of the labels known when the gateway
	// starts (each endpoint with each request result, cancel outcome and
	// upstream state), built once, with the option lists the instruments
	// take: a request's metrics cost no attribute set, and no allocation,
	// of their own. Read-only after newMetrics.
	sets map[labels]measurement
}

// measurement is one label set's option, as the lists an instrument's Add
// and Record take.
type measurement struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// newMeasurement makes o's lists.
func newMeasurement(o metric.MeasurementOption) measurement {
	return measurement{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
}

// labels are one measurement's attributes: the endpoint and the value of
// the instrument's other label (result, outcome or state).
type labels struct{ endpoint, key, value string }

// attrs returns the measurement of the labels, built once for the known
// ones.
func (m *metrics) attrs(endpoint, key, value string) measurement {
	if o, ok := m.sets[labels{endpoint, key, value}]; ok {
		return o
	}
	return newMeasurement(metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String(key, value)))
}

// known builds the measurement of the labels once, for attrs.
func (m *metrics) known(endpoint, key, value string) []metric.AddOption {
	o := newMeasurement(metric.WithAttributeSet(attribute.NewSet(attribute.String("endpoint", endpoint), attribute.String(key, value))))
	m.sets[labels{endpoint, key, value}] = o
	return o.add
}

func newMetrics(m metric.Meter, endpoints []string) (*metrics, error) {
	mt := metrics{sets: map[labels]measurement{}, serverSets: map[serverKey][]metric.RecordOption{}}
	var err error
	if mt.requests, err = m.Int64Counter("idemcoord.http.requests",
		metric.WithDescription("Requests by endpoint and result: the claim decision (first_run, replay, fingerprint_conflict, in_progress, takeover, outcome_unknown), or passthrough (endpoint (unmatched) when no endpoint matched), async_accepted, forwarded, redirected, or the refusal (store_unavailable, unauthorized, ...).")); err != nil {
		return nil, err
	}
	if mt.cancels, err = m.Int64Counter("idemcoord.cancels",
		metric.WithDescription("DELETE /v1/operations/{id} decisions by endpoint and outcome: cancelled, already_cancelled, irreversible (the record's stage or state prevents it), refused_upstream (the upstream named an irreversible stage), undetermined, unsupported, routed (sent to the owner region, or refused while ownership moves), region_unavailable, store_unavailable, contention.")); err != nil {
		return nil, err
	}
	if mt.upstream, err = m.Int64Counter("idemcoord.upstream.results",
		metric.WithDescription("Upstream executions by the state their answer was classified into.")); err != nil {
		return nil, err
	}
	if mt.latency, err = m.Float64Histogram("idemcoord.http.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
		metric.WithDescription("Time to answer a request, by endpoint and result (as idemcoord.http.requests).")); err != nil {
		return nil, err
	}
	server, err := httpconv.NewServerRequestDuration(m)
	if err != nil {
		return nil, err
	}
	mt.server = server.Inst()
	ctx := context.Background()
	for _, ep := range endpoints {
		for _, r := range requestResults {
			mt.requests.Add(ctx, 0, mt.known(ep, "result", r)...)
		}
		for _, o := range cancelOutcomes {
			mt.cancels.Add(ctx, 0, mt.known(ep, "outcome", o)...)
		}
		for _, s := range upstreamStates {
			mt.upstream.Add(ctx, 0, mt.known(ep, "state", string(s))...)
		}
	}
	mt.requests.Add(ctx, 0, mt.known(unmatchedEndpoint, "result", "passthrough")...)
	return &mt, nil
}

// request counts one answered request and its latency, and puts the result
// on the request's span.
func (m *metrics) request(ctx context.Context, endpoint, result string, start time.Time) {
	if endpoint == "" {
		endpoint = unmatchedEndpoint
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String(AttrEndpoint, endpoint), attribute.String(AttrResult, result))
	}
	attrs := m.attrs(endpoint, "result", result)
	m.requests.Add(ctx, 1, attrs.add...)
	m.latency.Record(ctx, time.Since(start).Seconds(), attrs.rec...)
}

// cancelOutcomes are the outcomes idemcoord_cancels_total is exported
// with at zero, per endpoint.
var cancelOutcomes = []string{"cancelled", "already_cancelled", "irreversible", "refused_upstream", "undetermined"}

// cancel counts one cancel decision.
func (m *metrics) cancel(ctx context.Context, endpoint, outcome string) {
	m.cancels.Add(ctx, 1, m.attrs(endpoint, "outcome", outcome).add...)
}

func (m *metrics) upstreamResult(ctx context.Context, endpoint, state string) {
	m.upstream.Add(ctx, 1, m.attrs(endpoint, "state", state).add...)
}

// serverKey is one attribute set of http.server.request.duration.
type serverKey struct {
	method, route, scheme string
	status                int
}

// served observes one request's http.server.request.duration: the
// conventions' required http.request.method and url.scheme, http.route
// when an endpoint matched, the status, and error.type (the status) for a
// 5xx.
func (m *metrics) served(ctx context.Context, rt *serverRoute, r *http.Request, status int, start time.Time) {
	k := serverKey{method: rt.method, route: rt.route, scheme: scheme(r), status: status}
	m.serverMu.RLock()
	o, ok := m.serverSets[k]
	m.serverMu.RUnlock()
	if !ok {
		attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(k.method), semconv.URLScheme(k.scheme),
			semconv.HTTPResponseStatusCode(status)}
		if k.route != "" {
			attrs = append(attrs, semconv.HTTPRoute(k.route))
		}
		if status >= 500 {
			attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		}
		o = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
		m.serverMu.Lock()
		m.serverSets[k] = o
		m.serverMu.Unlock()
	}
	m.server.Record(ctx, time.Since(start).Seconds(), o...)
}
