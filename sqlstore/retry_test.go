package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// counter sums an Int64 counter's data points by the value of one attribute.
func counter(t *testing.T, r *sdkmetric.ManualReader, name, attr string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s is %T, want an int64 sum", name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				v, _ := dp.Attributes.Value(attribute.Key(attr))
				got[v.AsString()] += dp.Value
			}
		}
	}
	return got
}

// waitForLockWaiters blocks until at least n backends of this database wait
// on a lock (racers queued behind an uncommitted claim, updates behind a
// row lock). It polls a condition; it never waits out a lease.
func waitForLockWaiters(ctx context.Context, s *sqlstore.Store, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var waiting int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			return err
		}
		if waiting >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fewer than %d backends ever waited on a lock", n)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestRacersRetrySerializationFailures forces the case the design names: a
// racer whose snapshot predates the winner's commit waits on the winner's
// uncommitted claim, then fails with 40001 (INSERT ... ON CONFLICT DO NOTHING
// under SERIALIZABLE), and the store retries the whole transaction. The
// winner holds its transaction open until some racer is queued behind it, so
// at least one retry is certain, and the counter must show it.
func TestRacersRetrySerializationFailures(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { provider.Shutdown(context.Background()) })
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), DBClock: newClock(), MaxConns: 70, Seed: 4,
		Meter: provider.Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	createPayments(t, s)

	req := request(t, "tenant/alice", "retry-race", `{"amount":"50"}`)
	var calls atomic.Int64
	held := atomic.Bool{}
	fn := func(ctx context.Context, tx pgx.Tx, opID uuid.UUID) (store.Snapshot, error) {
		calls.Add(1)
		if held.CompareAndSwap(false, true) {
			if err := waitForLockWaiters(ctx, s, 1); err != nil {
				return store.Snapshot{}, err
			}
		}
		return pay("50", nil)(ctx, tx, opID)
	}
	const n = 50
	outcomes := make([]store.Outcome, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := s.RunLocal(ctx, req, fn)
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
			}
			outcomes[i] = c.Outcome
		})
	}
	close(start)
	wg.Wait()
	if got := tally(outcomes); got["first_run"] != 1 || got["replay"] != n-1 {
		t.Errorf("outcomes = %v, want 1 first_run and %d replays", got, n-1)
	}
	onePayment(t, s)

	retries := counter(t, reader, "idemcoord.tx_retries", "op")
	if retries["tx"] < 1 {
		t.Errorf("idemcoord.tx_retries = %v, want at least one whole-transaction retry (op=tx)", retries)
	}
	outs := counter(t, reader, "idemcoord.decisions", "decision")
	if outs["first_run"] != 1 || outs["replay"] != n-1 {
		t.Errorf("idemcoord.decisions = %v, want first_run 1 and replay %d", outs, n-1)
	}
	t.Logf("tx_retries %v, outcomes %v, LocalFunc ran %d time(s)", retries, outs, calls.Load())
}
