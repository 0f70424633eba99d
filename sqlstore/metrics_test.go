package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// TestDecisionsSumToClaimsEventsApart records an unknown outcome and its
// retry: the decisions counter must count exactly one decision per claim,
// and the recorded unknown outcome must be an event, not a decision.
func TestDecisionsSumToClaimsEventsApart(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { provider.Shutdown(context.Background()) })
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), DBClock: newClock(), MaxConns: 4,
		Meter: provider.Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	s.InitMetrics(ctx, []string{"POST /v1/payments"})
	if got := counter(t, reader, "idemcoord.decisions", "decision"); len(got) != 7 {
		t.Errorf("decisions exported before any claim: %v, want the seven decisions at zero", got)
	}

	claims := 0
	begin := func(key string) store.Claim {
		claims++
		c, err := s.Begin(ctx, request(t, "tenant/alice", key, `{"amount":"1"}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := begin("k1")
	if err := s.Finish(ctx, c.Lease, store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "timeout"}); err != nil {
		t.Fatal(err)
	}
	begin("k1") // outcome_unknown
	c = begin("k2")
	if err := s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
		t.Fatal(err)
	}
	begin("k2") // replay

	decisions := counter(t, reader, "idemcoord.decisions", "decision")
	total := int64(0)
	for _, n := range decisions {
		total += n
	}
	if total != int64(claims) || decisions["first_run"] != 2 || decisions["outcome_unknown"] != 1 || decisions["replay"] != 1 {
		t.Errorf("decisions = %v (sum %d), want first_run 2, outcome_unknown 1, replay 1 summing to the %d claims", decisions, total, claims)
	}
	if events := counter(t, reader, "idemcoord.events", "event"); events["outcome_unknown_recorded"] != 1 {
		t.Errorf("events = %v, want outcome_unknown_recorded 1", events)
	}
	for _, op := range []string{"claim", "finish"} {
		if _, ok := counter(t, reader, "idemcoord.fenced_writes_rejected", "op")[op]; !ok {
			t.Errorf("idemcoord.fenced_writes_rejected{op=%s} not exported at zero", op)
		}
	}
}

// TestOpenWithoutMigrateRefusesMissingSchema: only an explicit migration
// creates the schema; Open says which command does it.
func TestOpenWithoutMigrateRefusesMissingSchema(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	_, err := sqlstore.Open(context.Background(), sqlstore.Config{DSN: dsn, MaxConns: 2})
	if !errors.Is(err, sqlstore.ErrSchemaMissing) || !strings.Contains(err.Error(), "run idemctl migrate") {
		t.Fatalf("Open on an empty database: %v, want ErrSchemaMissing", err)
	}
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{DSN: dsn, MaxConns: 2, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlstore.Open(context.Background(), sqlstore.Config{DSN: dsn, MaxConns: 2})
	if err != nil {
		t.Fatalf("Open after migrating: %v", err)
	}
	s.Close()
}
