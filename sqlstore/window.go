package sqlstore

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/downstream"
	"github.com/idemcoord/idemcoord/store"
)

// Where a downstream-window refusal happened, the path label of its
// counter: a client's claim, or the async recovery's takeover.
const (
	windowClaim    = "claim"
	windowRecovery = "recovery"
)

// newWindowCounter creates idemcoord.downstream_window_passed; InitMetrics
// exports it at zero per endpoint and path (initWindowMetrics).
func newWindowCounter(m metric.Meter) (metric.Int64Counter, error) {
	c, err := m.Int64Counter("idemcoord.downstream_window_passed",
		metric.WithDescription("Attempts not sent again because their operation was first claimed longer ago than "+
			"the endpoint's downstream_window (the provider may have forgotten its key), by endpoint and path: claim "+
			"(a client's retry got 409 downstream-window-passed) or recovery (async recovery left it). Each one waits "+
			"for an operator: docs/runbook.md, \"Past the downstream window\"."))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// initWindowMetrics exports endpoint's refusal counts at zero.
func (s *Store) initWindowMetrics(ctx context.Context, endpoint string) {
	for _, p := range []string{windowClaim, windowRecovery} {
		s.window.Add(ctx, 0, metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String("path", p)))
	}
}

// windowPassed counts one refusal on endpoint by path.
func (s *Store) windowPassed(ctx context.Context, endpoint, path string) {
	s.window.Add(ctx, 1, metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String("path", path)))
}

// checkWindow returns an error wrapping store.ErrDownstreamWindowPassed
// when rec was first claimed longer ago than window by the database's
// clock (or Config.DBClock's), for a takeover that did not read the
// statement time with the record (TakeOver of a scanned record).
func (s *Store) checkWindow(ctx context.Context, rec store.Record, window time.Duration) error {
	if window <= 0 {
		return nil
	}
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE($1::TIMESTAMPTZ, now())`, s.now()).Scan(&now); err != nil {
		return giveUp(fmt.Errorf("sqlstore: read the database's time: %w", err))
	}
	if downstream.Passed(rec.CreatedAt, now, window) {
		s.windowPassed(ctx, rec.Scope.Endpoint, windowRecovery)
		return fmt.Errorf("%w: operation %s first claimed at %s, window %s", store.ErrDownstreamWindowPassed,
			rec.OperationID, rec.CreatedAt.UTC().Format(time.RFC3339), window)
	}
	return nil
}
