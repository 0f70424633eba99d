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

// Key parses k as an Idempotency-Key header, failing t if it is invalid.
func Key(t testing.TB, k string) idempotency.Key {
	t.Helper()
	key, err := idempotency.ParseKeyHeader(k)
	if err != nil {
		t.Fatalf("key %q: %v", k, err)
	}
	return key
}

// Fingerprint is the fingerprint of a JSON POST /v1/payments with body.
func Fingerprint(t testing.TB, body string) idempotency.Fingerprint {
	t.Helper()
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: "POST", Path: "/v1/payments",
		ContentType: "application/json", Body: []byte(body)}, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return fp
}

// Request builds a claim request for actor/key/body on endpoint
// "POST /v1/payments", shard epoch 1, from Region, with a 30 s lease and a
// 24 h TTL.
func Request(t testing.TB, actor, key, body string) store.ClaimRequest {
	t.Helper()
	return store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: "POST /v1/payments", Key: Key(t, key)},
		Fingerprint: Fingerprint(t, body),
		Token:       fencing.Token{Shard: shard.Of(actor, shard.DefaultCount), Epoch: 1, Region: Region},
		Worker:      "test",
		Lease:       30 * time.Second,
		TTL:         24 * time.Hour,
	}
}

// Completed is a COMPLETED result: 201, JSON body, resource pay_1.
func Completed(body string) store.Result {
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

// Tally counts outcomes by name.
func Tally(outcomes []store.Outcome) map[string]int {
	m := map[string]int{}
	for _, o := range outcomes {
		m[fmt.Sprint(o)]++
	}
	return m
}

func shardOf(actor string) int { return shard.Of(actor, shard.DefaultCount) }

// MustBegin claims req and fails t unless the outcome is want.
func MustBegin(t testing.TB, s store.Claims, req store.ClaimRequest, want store.Outcome) store.Claim {
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

// WithState claims req and leaves it in state: PENDING and IN_PROGRESS are
// left claimed, the others are finished with that result.
func WithState(t testing.TB, s store.Backend, req store.ClaimRequest, state idempotency.State) store.Record {
	t.Helper()
	ctx := context.Background()
	req.Pending = state == idempotency.Pending
	c := MustBegin(t, s, req, store.FirstRun)
	if state != idempotency.Pending && state != idempotency.InProgress {
		res := store.Result{State: state, ErrorSummary: "summary of " + string(state)}
		if state.Terminal() {
			res = Completed(`{"state":"` + string(state) + `"}`)
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

// Cleanup runs one cleanup pass of up to batch records and returns how
// many it compacted and deleted.
func Cleanup(t testing.TB, s store.Backend, batch int) int {
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
	req := Request(t, "tenant/alice", key, `{"amount":"9"}`)
	c := MustBegin(t, s, req, store.FirstRun)
	if err := s.Finish(context.Background(), c.Lease, store.Result{State: idempotency.OutcomeUnknown, ErrorSummary: "charge timed out"}); err != nil {
		t.Fatal(err)
	}
	u := MustBegin(t, s, req, store.Unresolved)
	return req, u.Record
}
