package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/internal/toxitest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// markLostStore is the real store behind a real proxy, except that the
// first "sending" mark commits and its answer is then lost with the
// store: the mark is written through a copy of the lease (the worker's
// handle never sees it), the proxy goes down, and the worker's own write
// of the mark meets the outage.
type markLostStore struct {
	*sqlstore.Store
	proxy *toxiproxy.Proxy
	once  sync.Once
}

func (s *markLostStore) RecordStage(ctx context.Context, l *store.Lease, stage string) error {
	first := false
	if stage == "sending" {
		s.once.Do(func() { first = true })
	}
	if !first {
		return s.Store.RecordStage(ctx, l, stage)
	}
	unseen := *l
	if err := s.Store.RecordStage(ctx, &unseen, stage); err != nil {
		return err
	}
	s.proxy.Stop()
	s.Store.Pool().Reset()
	return s.Store.RecordStage(ctx, l, stage)
}

// TestNothingExecutedNeverEndsAsOutcomeUnknown: on an endpoint without a
// resolve path the worker marks "sending" before it sends. When that
// mark commits but its answer is lost with the store, the gateway sends
// nothing and answers 503 rejected ("nothing was executed"). The record
// must never say otherwise: once the store answers again the claim is
// released (RETRYABLE_FAILURE, not sent), so the next retry, even after
// the lease, runs the intent once, instead of a takeover finding the
// mark and answering 504 "the upstream did not answer in time" for a
// request that was never sent.
func TestNothingExecutedNeverEndsAsOutcomeUnknown(t *testing.T) {
	var runs atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(upstream.Close)
	up, _ := url.Parse(upstream.URL)

	dsn := pgtest.NewDatabase(t)
	pu, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := toxitest.Proxy(t, "pg", pu.Host)
	pu.Host = p.Listen
	fake := clock.NewFake(time.Now())
	s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: pu.String(), MaxConns: 4, DBClock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bootstrap(t, s)
	direct, err := sqlstore.Open(context.Background(), sqlstore.Config{DSN: dsn, MaxConns: 2, DBClock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	_, gw := serveGateway(t, "w", &markLostStore{Store: s, proxy: p}, fake, up, "")
	alice := token(t, "alice")

	st, hd, b := do(t, post(t, gw.URL+"/v1/things", alice, "never-sent", `{}`))
	if st != http.StatusServiceUnavailable || problemType(t, b) != "store-unavailable" ||
		hd.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusRejected || runs.Load() != 0 {
		t.Fatalf("first attempt: %s after %d runs, want 503 store-unavailable, rejected, nothing sent", describe(st, hd, b), runs.Load())
	}
	var state, stage string
	read := func() error {
		return direct.Pool().QueryRow(context.Background(), `SELECT state, last_stage FROM idempotency_records`).Scan(&state, &stage)
	}
	if err := read(); err != nil || stage != "sending" {
		t.Fatalf("record %s at stage %q (%v): want the sending mark committed after all", state, stage, err)
	}

	if err := p.Start(); err != nil { // the store answers again
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if err := read(); err != nil {
			return err
		}
		if state != "RETRYABLE_FAILURE" {
			return fmt.Errorf("record %s at stage %q, want it released as not sent", state, stage)
		}
		return nil
	})
	fake.Advance(time.Hour) // past the lease: no takeover may find a mark
	st, hd, b = do(t, post(t, gw.URL+"/v1/things", alice, "never-sent", `{}`))
	if st != http.StatusCreated || runs.Load() != 1 {
		t.Errorf("retry: %s after %d runs, want 201 from the one run", describe(st, hd, b), runs.Load())
	}
}
