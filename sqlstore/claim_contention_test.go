package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// claimTx runs the store's claim statement for req in its own serializable
// transaction, as Begin does, and commits it.
func claimTx(ctx context.Context, s *sqlstore.Store, req store.ClaimRequest) error {
	tx, err := s.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	h := req.Scope.Key.Hash()
	rows, err := tx.Query(ctx, sqlstore.ClaimSQL, nil, req.Scope.Actor, req.Scope.Endpoint, h[:], req.Token.Shard,
		req.Token.Epoch, uuid.New(), req.Fingerprint.Sum[:], req.Fingerprint.Version, "IN_PROGRESS", "w/"+uuid.NewString(),
		req.Lease.Milliseconds(), req.TTL.Milliseconds(), req.Token.Region, nil, int64(0), nil)
	if err != nil {
		return err
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Close(); rows.Err() != nil {
		return rows.Err()
	}
	if n != 1 {
		return fmt.Errorf("claim returned %d rows, want 1", n)
	}
	return tx.Commit(ctx)
}

// TestConcurrentFirstRunsOfOneActorBothCommit: two first runs of one
// actor (different keys, so nothing to arbitrate) overlap. Both must
// commit. A claim that read the primary key before inserting would take a
// predicate lock on the leaf page the other inserts into; with both reads
// before both inserts, PostgreSQL's SERIALIZABLE aborts one of them
// (40001) for a conflict that is not there, and a busy actor retries a
// share of its first runs. The test holds the fence row FOR UPDATE so both
// claims are parked at the fence lock together, then lets them go.
func TestConcurrentFirstRunsOfOneActorBothCommit(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, nil)
	for i := range 20 { // the actor's keys already fill part of a leaf page
		mustBegin(t, s, request(t, "tenant/busy", fmt.Sprintf("earlier-%d", i), `{}`), store.FirstRun)
	}
	a := request(t, "tenant/busy", "first-a", `{}`)
	b := request(t, "tenant/busy", "first-b", `{}`)
	gate, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback(ctx)
	if _, err := gate.Exec(ctx, `SELECT 1 FROM shard_fences WHERE shard = $1 FOR UPDATE`, a.Token.Shard); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, req := range []store.ClaimRequest{a, b} {
		wg.Go(func() { errs[i] = claimTx(ctx, s, req) })
	}
	if err := waitForLockWaiters(ctx, s, 2); err != nil {
		t.Fatal(err)
	}
	gate.Rollback(ctx)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("claim %d: %v, want both first runs to commit", i, err)
		}
	}
}

// TestFinishWithinTheLeaseLeavesTheExpiryAlone: a run that finishes
// within its lease does not move expires_at, the only indexed column a
// finish could change, so PostgreSQL updates the row in place (HOT) and
// the record still lives at least TTL after the finish.
func TestFinishWithinTheLeaseLeavesTheExpiryAlone(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s, _ := openStore(t, clock)
	req := request(t, "tenant/alice", "expiry", `{}`)
	c := mustBegin(t, s, req, store.FirstRun)
	claimed, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(req.Lease - time.Second)
	if err := s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
		t.Fatal(err)
	}
	done, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if !done.ExpiresAt.Equal(claimed.ExpiresAt) {
		t.Errorf("finish moved expires_at from %v to %v", claimed.ExpiresAt, done.ExpiresAt)
	}
	if min := clock.Now().Add(req.TTL); done.ExpiresAt.Before(min) {
		t.Errorf("expires_at %v is less than TTL after the finish (%v)", done.ExpiresAt, min)
	}
}
