package gateway

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are the gateway's instruments. Together with the store's
// (idemcoord.outcomes, idemcoord.fenced_writes_rejected, ...) they count
// every outcome of the protocol.
type metrics struct {
	requests metric.Int64Counter
	upstream metric.Int64Counter
	latency  metric.Float64Histogram
}

func newMetrics(m metric.Meter) (*metrics, error) {
	var mt metrics
	var err error
	if mt.requests, err = m.Int64Counter("idemcoord.http.requests",
		metric.WithDescription("Requests by endpoint and result: first_run, replay, takeover, fingerprint_conflict, in_progress, outcome_unknown, store_unavailable, region_unavailable, invalid_key, missing_key, unauthorized, body_too_large, malformed_body, passthrough, async_accepted.")); err != nil {
		return nil, err
	}
	if mt.upstream, err = m.Int64Counter("idemcoord.upstream.results",
		metric.WithDescription("Upstream executions by the state their answer was classified into.")); err != nil {
		return nil, err
	}
	if mt.latency, err = m.Float64Histogram("idemcoord.http.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
		metric.WithDescription("Time to answer a coordinated request.")); err != nil {
		return nil, err
	}
	return &mt, nil
}

func (m *metrics) request(ctx context.Context, endpoint, result string, start time.Time) {
	attrs := metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String("result", result))
	m.requests.Add(ctx, 1, attrs)
	m.latency.Record(ctx, time.Since(start).Seconds(), attrs)
}

func (m *metrics) upstreamResult(ctx context.Context, endpoint, state string) {
	m.upstream.Add(ctx, 1, metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String("state", state)))
}
