package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

func mustKey(t testing.TB, k string) idempotency.Key {
	t.Helper()
	key, err := idempotency.ParseKeyHeader(k)
	if err != nil {
		t.Fatalf("key %q: %v", k, err)
	}
	return key
}

func fingerprint(t testing.TB, body string) idempotency.Fingerprint {
	t.Helper()
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(body)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return fp
}

// request builds a claim request for actor/key/body on shard epoch 1, from
// Region.
func request(t testing.TB, actor, key, body string) store.ClaimRequest {
	t.Helper()
	return store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: "POST /v1/payments", Key: mustKey(t, key)},
		Fingerprint: fingerprint(t, body),
		Token:       fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: Region},
		Worker:      "test",
		Lease:       30 * time.Second,
		TTL:         24 * time.Hour,
	}
}

func completed(body string) store.Result {
	return store.Result{State: idempotency.Completed, Snapshot: store.Snapshot{
		Status: 201, Body: []byte(body), ResourceID: "pay_1",
		Header: map[string][]string{"Content-Type": {"application/json"}}}}
}

// records counts the stored records, through the contract's Stats.
func records(t testing.TB, s store.Backend) int {
	t.Helper()
	st, err := s.Stats(context.Background(), 0, time.Hour)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	n := 0
	for _, c := range st.ByState {
		n += int(c)
	}
	return n
}

func tally(outcomes []store.Outcome) map[string]int {
	m := map[string]int{}
	for _, o := range outcomes {
		m[fmt.Sprint(o)]++
	}
	return m
}

func shardOf(actor string) int { return shard.Of(actor, shard.DefaultCount) }

// mustBegin claims req and checks the outcome.
func mustBegin(t testing.TB, s store.Claims, req store.ClaimRequest, want store.Outcome) store.Claim {
	t.Helper()
	c, err := s.Begin(context.Background(), req)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if c.Outcome != want {
		t.Fatalf("begin = %v (record %s, retry after %v), want %v", c.Outcome, c.Record.State, c.RetryAfter, want)
	}
	return c
}

// setClock moves clock to at.
func setClock(c *Clock, at time.Time) { c.Advance(at.Sub(c.Now())) }

// withState claims req and leaves it in state: PENDING and IN_PROGRESS are
// left claimed, the others are finished with that result.
func withState(t testing.TB, s store.Backend, req store.ClaimRequest, state idempotency.State) store.Record {
	t.Helper()
	ctx := context.Background()
	req.Pending = state == idempotency.Pending
	c := mustBegin(t, s, req, store.FirstRun)
	if state != idempotency.Pending && state != idempotency.InProgress {
		res := store.Result{State: state, ErrorSummary: "summary of " + string(state)}
		if state.Terminal() {
			res = completed(`{"state":"` + string(state) + `"}`)
			res.State = state
		}
		if err := s.Finish(ctx, c.Lease, res); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != state {
		t.Fatalf("record is %s, want %s", rec.State, state)
	}
	return rec
}

func cleanup(t testing.TB, s store.Backend, batch int) int {
	t.Helper()
	n, err := s.Cleanup(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// unknownRecord claims a fresh key and records OUTCOME_UNKNOWN for it.
func unknownRecord(t *testing.T, s store.Backend, key string) (store.ClaimRequest, store.Record) {
	t.Helper()
	req := request(t, "tenant/alice", key, `{"amount":"9"}`)
	c := mustBegin(t, s, req, store.FirstRun)
	if err := s.Finish(context.Background(), c.Lease, store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "charge timed out"}); err != nil {
		t.Fatal(err)
	}
	u := mustBegin(t, s, req, store.Unresolved)
	return req, u.Record
}
