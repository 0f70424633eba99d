package storeotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storeotel"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// rig is a real store decorated, with its spans and histogram recorded
// in-process, and a connection to add triggers to its database.
type rig struct {
	raw    *sqlstore.Store
	st     *storeotel.Store
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	db     *pgx.Conn
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	raw, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: dsn, MaxAttempts: 4, RetryBase: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	if err := raw.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return storetest.Region }); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	r := &rig{raw: raw, spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), db: db}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() { r.tp.Shutdown(context.Background()) })
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.st, err = storeotel.New(raw, storeotel.Config{TracerProvider: r.tp, Meter: mp.Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exec runs sql on the store's database.
func (r *rig) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := r.db.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// span returns the one ended span named name.
func (r *rig) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(found), name)
	}
	return found[0]
}

// attrs returns a span's or event's attributes by key.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// check compares the attributes in want with got ("" for absent).
func check(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], w)
		}
	}
}

// retryCodes lists the SQLSTATE of each idemcoord.retry event of s.
func retryCodes(s sdktrace.ReadOnlySpan) []string {
	var codes []string
	for _, e := range s.Events() {
		if e.Name == "idemcoord.retry" {
			codes = append(codes, attrs(e.Attributes)["db.response.status_code"])
		}
	}
	return codes
}

// TestASerializationFailureTheStoreRetriedShowsOnTheClaimSpan: a claim
// whose first attempt PostgreSQL fails with a real serialization failure
// (40001), which the store retries internally and then succeeds, is one
// database client span (claim, postgresql, the database as namespace) with
// its decision, no error, and an idemcoord.retry event carrying 40001 as
// db.response.status_code: the absorbed conflict stays visible.
func TestASerializationFailureTheStoreRetriedShowsOnTheClaimSpan(t *testing.T) {
	r := newRig(t)
	r.exec(t, `
		CREATE SEQUENCE conflict_once;
		CREATE FUNCTION conflict_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('conflict_once') = 1 THEN
				RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER conflict_once BEFORE INSERT ON idempotency_records
		FOR EACH ROW EXECUTE FUNCTION conflict_once();`)
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "request")
	claim, err := r.st.Begin(ctx, storetest.Request(t, "tenant/alice", "k-40001", `{}`))
	parent.End()
	if err != nil || claim.Outcome != store.FirstRun {
		t.Fatalf("Begin = %v, %v; want a first run after the store's retry", claim.Outcome, err)
	}
	ns := r.raw.DBNamespace()
	if ns == "" {
		t.Fatal("the store names no database")
	}
	s := r.span(t, "claim "+ns)
	if s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("claim span kind %v parent %v, want a client span under the request", s.SpanKind(), s.Parent().SpanID())
	}
	check(t, "claim span", attrs(s.Attributes()), map[string]string{"db.system.name": "postgresql",
		"db.operation.name": "claim", "db.namespace": ns, "idemcoord.decision": "first_run",
		"idemcoord.endpoint": "POST /v1/payments", "error.type": "", "db.response.status_code": ""})
	if got := retryCodes(s); len(got) != 1 || got[0] != "40001" {
		t.Errorf("claim span retry events' SQLSTATEs %q, want [40001]", got)
	}
	if s.Status().Code == codes.Error {
		t.Errorf("claim span status %v, want no error (the retry succeeded)", s.Status())
	}
}

// TestAFinishTheStoreGaveUpOnCarriesItsSQLSTATE: a finish whose every
// attempt fails with 40001 gives up (store.ErrContention); its span is an
// error with 40001 as error.type and db.response.status_code and one
// retry event per attempt run again, and db.client.operation.duration
// counts it under those attributes, beside the claim's success.
func TestAFinishTheStoreGaveUpOnCarriesItsSQLSTATE(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	claim, err := r.st.Begin(ctx, storetest.Request(t, "tenant/alice", "k-giveup", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	r.exec(t, `
		CREATE FUNCTION always_conflict() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END $$;
		CREATE TRIGGER always_conflict BEFORE UPDATE ON idempotency_records
		FOR EACH ROW EXECUTE FUNCTION always_conflict();`)
	if err := r.st.Finish(ctx, claim.Lease, storetest.Completed(`{}`)); !errors.Is(err, store.ErrContention) {
		t.Fatalf("Finish = %v, want the store to give up under contention", err)
	}
	s := r.span(t, "finish "+r.raw.DBNamespace())
	check(t, "finish span", attrs(s.Attributes()), map[string]string{"db.operation.name": "finish",
		"error.type": "40001", "db.response.status_code": "40001", "idemcoord.state": "COMPLETED"})
	if s.Status().Code != codes.Error {
		t.Errorf("finish span status %v, want an error", s.Status())
	}
	if got := retryCodes(s); len(got) == 0 {
		t.Errorf("finish span has no retry events, want one per attempt run again")
	} else {
		for _, c := range got {
			if c != "40001" {
				t.Errorf("finish span retry events' SQLSTATEs %q, want all 40001", got)
				break
			}
		}
	}

	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "db.client.operation.duration" {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("db.client.operation.duration unit %q, want s", m.Unit)
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				a := attrs(dp.Attributes.ToSlice())
				if a["db.system.name"] != "postgresql" || a["db.namespace"] != r.raw.DBNamespace() {
					t.Errorf("data point %v: want db.system.name postgresql and the database as db.namespace", a)
				}
				counts[a["db.operation.name"]+" "+a["db.response.status_code"]] += dp.Count
			}
		}
	}
	for k, want := range map[string]uint64{"claim ": 1, "finish 40001": 1} {
		if counts[k] != want {
			t.Errorf("db.client.operation.duration count of %q = %d, want %d (all: %v)", k, counts[k], want, counts)
		}
	}
}
