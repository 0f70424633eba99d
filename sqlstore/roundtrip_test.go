package sqlstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// queryCounter is a pgx tracer that records every query the pool sends.
type queryCounter struct {
	mu   sync.Mutex
	sqls []string
}

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	c.sqls = append(c.sqls, strings.Join(strings.Fields(d.SQL), " "))
	c.mu.Unlock()
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// during returns the queries fn sent.
func (c *queryCounter) during(t *testing.T, fn func()) []string {
	t.Helper()
	c.mu.Lock()
	c.sqls = nil
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sqls
}

// TestStoreRoundTripsPerRequestPath counts the statements (one round trip
// each; one connection, prepared once, so no connect or prepare traffic)
// that each request path sends to the store. docs/multi-region.md
// ("Store round trips per request path") states these numbers.
func TestStoreRoundTripsPerRequestPath(t *testing.T) {
	ctx := context.Background()
	tracer := &queryCounter{}
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 1, Seed: 1, Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)

	firstRun := func(req store.ClaimRequest) {
		c, err := s.Begin(ctx, req)
		if err != nil || c.Outcome != store.FirstRun {
			t.Fatalf("first run: %v %v", c.Outcome, err)
		}
		if err := s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	begin := func(req store.ClaimRequest, want store.Outcome) {
		if c, err := s.Begin(ctx, req); err != nil || c.Outcome != want {
			t.Fatalf("begin: %v %v, want %v", c.Outcome, err, want)
		}
	}
	claimFirst := request(t, "tenant/alice", "warm", `{}`)
	s.PinClaimFirst()
	firstRun(claimFirst) // prepares the claim and finish statements on the one connection
	begin(claimFirst, store.Replayed)
	held := request(t, "tenant/alice", "held", `{}`)
	begin(held, store.FirstRun)

	tests := []struct {
		name string
		run  func()
		want int
	}{
		{"first run: claim, finish", func() { firstRun(request(t, "tenant/alice", "new", `{}`)) }, 2},
		{"replay: claim", func() { begin(claimFirst, store.Replayed) }, 1},
		{"in-progress hit: claim", func() { begin(held, store.InFlight) }, 1},
		{"fingerprint conflict: claim", func() { begin(request(t, "tenant/alice", "warm", `{"other":1}`), store.Mismatch) }, 1},
		{"ownership move: begin, compare-and-swap, audit, commit", func() {
			if err := s.MoveFence(ctx, fencing.Move{Shard: 5, From: 1, To: "eu-west", Operator: "t", Reason: "count"}); err != nil {
				t.Fatal(err)
			}
		}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tracer.during(t, tt.run); len(got) != tt.want {
				t.Fatalf("%d round trips, want %d:\n%s", len(got), tt.want, strings.Join(got, "\n"))
			}
		})
	}
}

// TestStoreRoundTripsOnTheReadFirstPath: while retries dominate an
// endpoint, a replay is one plain point read and a first run pays one
// more round trip (read, claim, finish).
func TestStoreRoundTripsOnTheReadFirstPath(t *testing.T) {
	ctx := context.Background()
	tracer := &queryCounter{}
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: pgtest.NewDatabase(t), MaxConns: 1, Seed: 1, Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	req := request(t, "tenant/bob", "storm", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
		t.Fatal(err)
	}
	for i := 0; !s.ReadFirst(req.Scope.Endpoint); i++ {
		if i == 1000 {
			t.Fatal("endpoint never switched to read-first after 1000 replays")
		}
		if _, err := s.Begin(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if got := tracer.during(t, func() {
		if c, err := s.Begin(ctx, req); err != nil || c.Outcome != store.Replayed {
			t.Fatalf("replay: %v %v", c.Outcome, err)
		}
	}); len(got) != 1 || !strings.HasPrefix(got[0], "SELECT") || strings.Contains(got[0], "INSERT") {
		t.Fatalf("read-first replay sent %q, want one plain SELECT", got)
	}
	if got := tracer.during(t, func() {
		c, err := s.Begin(ctx, request(t, "tenant/bob", "fresh", `{}`))
		if err != nil || c.Outcome != store.FirstRun {
			t.Fatalf("first run: %v %v", c.Outcome, err)
		}
		if err := s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
			t.Fatal(err)
		}
	}); len(got) != 3 {
		t.Fatalf("read-first first run: %d round trips, want 3 (read, claim, finish):\n%s", len(got), strings.Join(got, "\n"))
	}
}
