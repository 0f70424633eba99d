package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// twoTier is req with a full answer kept 1h and the key kept 48h.
func twoTier(req store.ClaimRequest) store.ClaimRequest {
	req.TTL, req.ReplayTTL = 48*time.Hour, time.Hour
	return req
}

func TestARetryAfterReplayTTLFindsTheMarkerAndNeverRunsAgain(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	req := twoTier(request(t, "tenant/alice", "two-tier", `{"amount":1}`))
	claimedAt := clock.Now()
	c := mustBegin(t, s, req, store.FirstRun)
	if want := claimedAt.Add(req.Lease + req.TTL); !c.Lease.RecordExpiresAt.Equal(want) {
		t.Fatalf("first run: key honoured until %v, want claim + lease + ttl %v", c.Lease.RecordExpiresAt, want)
	}
	if err := s.Finish(ctx, c.Lease, completed(`{"id":"pay_1"}`)); err != nil {
		t.Fatal(err)
	}
	full, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	replayEnds := claimedAt.Add(req.Lease + req.ReplayTTL)

	// Up to replay_ttl the full answer stays.
	clock.Set(replayEnds.Add(-time.Microsecond))
	if n := cleanup(t, s, 0); n != 0 {
		t.Fatalf("before replay_ttl: cleanup touched %d records, want 0", n)
	}
	if c := mustBegin(t, s, req, store.Replayed); c.Record.Compacted || string(c.Record.Snapshot.Body) != `{"id":"pay_1"}` {
		t.Fatalf("before replay_ttl: replay compacted=%v body %q, want the full answer", c.Record.Compacted, c.Record.Snapshot.Body)
	}

	// After it the record is a marker: the answer is gone, the key is not.
	clock.Set(replayEnds)
	if n := cleanup(t, s, 0); n != 1 {
		t.Fatalf("at replay_ttl: cleanup touched %d records, want 1 compacted", n)
	}
	m := mustBegin(t, s, req, store.Replayed)
	rec := m.Record
	switch {
	case !rec.Compacted, rec.Snapshot.Body != nil, rec.Snapshot.Header != nil, rec.ErrorSummary != "":
		t.Fatalf("marker keeps compacted=%v body %q headers %v summary %q", rec.Compacted, rec.Snapshot.Body,
			rec.Snapshot.Header, rec.ErrorSummary)
	case rec.OperationID != full.OperationID, rec.State != idempotency.Completed, rec.Snapshot.Status != 201,
		rec.Snapshot.ResourceID != "pay_1", rec.Fingerprint != full.Fingerprint:
		t.Fatalf("marker = op %s %s status %d resource %q, want op %s COMPLETED 201 pay_1 with the fingerprint",
			rec.OperationID, rec.State, rec.Snapshot.Status, rec.Snapshot.ResourceID, full.OperationID)
	case !rec.ExpiresAt.Equal(full.ExpiresAt):
		t.Fatalf("marker honoured until %v, the full record promised %v", rec.ExpiresAt, full.ExpiresAt)
	}
	mustBegin(t, s, twoTier(request(t, "tenant/alice", "two-tier", `{"amount":2}`)), store.Mismatch)

	// The marker lives until ttl, and nothing runs again before.
	clock.Set(full.ExpiresAt.Add(-time.Microsecond))
	if n := cleanup(t, s, 0); n != 0 {
		t.Fatalf("before ttl: cleanup touched %d records, want 0", n)
	}
	mustBegin(t, s, req, store.Replayed)
	clock.Set(full.ExpiresAt)
	if n := cleanup(t, s, 0); n != 1 {
		t.Fatalf("at ttl: cleanup touched %d records, want the marker deleted", n)
	}
	if _, err := s.Read(ctx, req.Scope); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after ttl: read = %v, want ErrNotFound", err)
	}
}

func TestCompactionNeverTouchesUnfinishedRecords(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	var reqs []store.ClaimRequest
	for _, st := range []idempotency.State{idempotency.Pending, idempotency.InProgress, idempotency.OutcomeUnknown} {
		req := twoTier(request(t, "tenant/alice", "unfinished-"+string(st), `{}`))
		withState(t, s, req, st)
		reqs = append(reqs, req)
	}
	clock.Advance(30 * 24 * time.Hour)
	if n := cleanup(t, s, 0); n != 0 {
		t.Fatalf("cleanup touched %d unfinished records, want 0", n)
	}
	for _, req := range reqs {
		rec, err := s.Read(ctx, req.Scope)
		if err != nil || rec.Compacted {
			t.Fatalf("%s: read = compacted %v, %v; want kept whole", req.Scope.Key, rec.Compacted, err)
		}
	}
}

func TestCompactionRunsInBoundedBatches(t *testing.T) {
	clock := newClock()
	s, _ := openStore(t, clock)
	for i := range 7 {
		withState(t, s, twoTier(request(t, "tenant/alice", fmt.Sprintf("batch-%d", i), `{}`)), idempotency.Completed)
	}
	clock.Advance(2 * time.Hour)
	var got []int
	for n := cleanup(t, s, 3); n > 0; n = cleanup(t, s, 3) {
		got = append(got, n)
	}
	if fmt.Sprint(got) != "[3 3 1]" {
		t.Fatalf("passes of batch 3 touched %v, want [3 3 1]", got)
	}
	if n := count(t, s, `SELECT count(*) FROM idempotency_records WHERE compacted AND response_body IS NULL`); n != 7 {
		t.Fatalf("%d compacted records, want 7 (none deleted before ttl)", n)
	}
}

func TestALateResultKeepsItsFullAnswerForReplayTTL(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	req := twoTier(request(t, "tenant/alice", "late", `{}`))
	c := mustBegin(t, s, req, store.FirstRun)
	if err := s.Heartbeat(ctx, c.Lease); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Hour) // the run outlasted the claim's replay tier, heartbeating
	if err := s.Heartbeat(ctx, c.Lease); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, c.Lease, completed(`{"late":true}`)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(req.ReplayTTL - time.Microsecond)
	if n := cleanup(t, s, 0); n != 0 {
		t.Fatalf("within replay_ttl of the result: cleanup touched %d, want 0", n)
	}
	rec, err := s.Read(ctx, req.Scope)
	if err != nil || rec.Compacted || rec.Snapshot.Body == nil {
		t.Fatalf("within replay_ttl of the result: compacted=%v body %q err %v", rec.Compacted, rec.Snapshot.Body, err)
	}
	if want := clock.Now().Add(time.Microsecond - req.ReplayTTL + req.TTL); rec.ExpiresAt.Before(want) {
		t.Fatalf("key honoured until %v, want at least result + ttl %v", rec.ExpiresAt, want)
	}
}

func TestARetryableFailureCompactedThenRetriedKeepsItsNewAnswer(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	req := twoTier(request(t, "tenant/alice", "retryable", `{}`))
	withState(t, s, req, idempotency.RetryableFailure)
	clock.Advance(2 * time.Hour)
	if n := cleanup(t, s, 0); n != 1 {
		t.Fatalf("cleanup touched %d, want the retryable failure compacted", n)
	}
	c := mustBegin(t, s, req, store.TakenOver)
	if err := s.Finish(ctx, c.Lease, completed(`{"second":true}`)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(req.ReplayTTL)
	if n := cleanup(t, s, 0); n != 0 {
		t.Fatalf("within replay_ttl of the new result: cleanup touched %d, want 0", n)
	}
	r := mustBegin(t, s, req, store.Replayed)
	if r.Record.Compacted || string(r.Record.Snapshot.Body) != `{"second":true}` {
		t.Fatalf("replay of the new result: compacted=%v body %q", r.Record.Compacted, r.Record.Snapshot.Body)
	}
	clock.Advance(req.Lease)
	if n := cleanup(t, s, 0); n != 1 {
		t.Fatalf("after the new result's replay_ttl: cleanup touched %d, want 1 compacted", n)
	}
	if rec, err := s.Read(ctx, req.Scope); err != nil || !rec.Compacted {
		t.Fatalf("read = compacted %v, %v; want a marker", rec.Compacted, err)
	}
}

// TestCompactionKeepsARetryableFailuresRecoveryPoint: an endpoint whose
// retries complete a partly done intent (KeepStages) resumes from the last
// stage; compacting the failure must not send the retry back to the start.
func TestCompactionKeepsARetryableFailuresRecoveryPoint(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	req := twoTier(request(t, "tenant/alice", "resume", `{}`))
	req.KeepStages = true
	c := mustBegin(t, s, req, store.FirstRun)
	if err := s.RecordStage(ctx, c.Lease, "reserved"); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, c.Lease, store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream 503"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if n := cleanup(t, s, 0); n != 1 {
		t.Fatalf("cleanup touched %d, want the retryable failure compacted", n)
	}
	if r := mustBegin(t, s, req, store.TakenOver); r.Lease.LastStage != "reserved" {
		t.Fatalf("retry after compaction resumes from %q, want the recovery point %q", r.Lease.LastStage, "reserved")
	}
}
