package crdb

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are the store's OpenTelemetry instruments. Names follow the
// idemcoord_ prefix every component uses, so one Prometheus scrape shows the
// whole protocol.
type metrics struct {
	outcomes  metric.Int64Counter // by endpoint and outcome
	fencedC   metric.Int64Counter // writes refused by the fence, by op
	lost      metric.Int64Counter // version-conditioned updates that matched nothing
	retries   metric.Int64Counter // whole-transaction retries on 40001/40P01
	cleanedUp metric.Int64Counter // records deleted by TTL cleanup
}

func newMetrics(m metric.Meter) (*metrics, error) {
	var mt metrics
	var err error
	if mt.outcomes, err = m.Int64Counter("idemcoord.outcomes",
		metric.WithDescription("Claim decisions and result events: first_run, replay, fingerprint_conflict, in_progress, takeover, outcome_unknown, outcome_unknown_recorded, outcome_unknown_resolved.")); err != nil {
		return nil, err
	}
	if mt.fencedC, err = m.Int64Counter("idemcoord.fenced_writes_rejected",
		metric.WithDescription("Writes refused because the writer's epoch was not the shard's.")); err != nil {
		return nil, err
	}
	if mt.lost, err = m.Int64Counter("idemcoord.lost_ownership",
		metric.WithDescription("Version-conditioned updates that affected no row: the operation was taken over.")); err != nil {
		return nil, err
	}
	if mt.retries, err = m.Int64Counter("idemcoord.tx_retries",
		metric.WithDescription("Whole-transaction retries after serialization failures (40001) or deadlocks (40P01).")); err != nil {
		return nil, err
	}
	if mt.cleanedUp, err = m.Int64Counter("idemcoord.cleanup_deleted",
		metric.WithDescription("Expired resting records deleted by TTL cleanup.")); err != nil {
		return nil, err
	}
	return &mt, nil
}

func (m *metrics) outcome(ctx context.Context, endpoint, outcome string) {
	m.outcomes.Add(ctx, 1, metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String("outcome", outcome)))
}

func (m *metrics) fenced(ctx context.Context, op string) {
	m.fencedC.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

func (m *metrics) lostOwnership(ctx context.Context, op string) {
	m.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

func (m *metrics) txRetry(ctx context.Context, op string) {
	m.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}
