package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"

	"github.com/idemcoord/idemcoord/internal/pgtest"
)

// actorsOn returns n actors other than actor on actor's shard (a batch of
// theirs waits on that shard's fence row while it is held).
func actorsOn(actor string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		a := fmt.Sprintf("tenant/on-%d", i)
		if shardOf(a) == shardOf(actor) && a != actor {
			out = append(out, a)
		}
	}
	return out
}

// growStore is a store with the default group commit and two grow
// slots (GrowQueue 0: a refilled full batch opens one), except that a
// queued request never leaves the queue by MaxQueueWait (so what sends a
// batch is the queue alone), on a fresh database, with a direct store
// for holding fence rows.
func growStore(t *testing.T) gcStore {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	direct := openDSN(t, dsn, newClock()) // migrates
	gc := sqlstore.DefaultGroupCommit
	gc.GrowSlots, gc.MaxQueueWait = 2, 0
	g := openGroupCommitWith(t, dsn, newClock(), gc)
	g.direct = direct
	return g
}

// lockWaiters is how many of the database's backends wait on a lock.
func lockWaiters(t *testing.T, s *sqlstore.Store) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// beginAll starts Begin for each request in its own goroutine and
// returns the channel of their claims, in the order they answer.
func beginAll(t *testing.T, s *sqlstore.Store, reqs []store.ClaimRequest) <-chan beginAnswer {
	out := make(chan beginAnswer, len(reqs))
	for _, r := range reqs {
		go func() {
			c, err := s.Begin(context.Background(), r)
			out <- beginAnswer{r.Scope.Actor, c, err}
		}()
	}
	return out
}

type beginAnswer struct {
	actor string
	c     store.Claim
	err   error
}

// awaitFirstRuns takes n answers from answers and fails unless each is a
// first run.
func awaitFirstRuns(t *testing.T, answers <-chan beginAnswer, n int, what string) {
	t.Helper()
	for range n {
		select {
		case a := <-answers:
			if a.err != nil || a.c.Outcome != store.FirstRun {
				t.Fatalf("%s: claim of %s: %v %v, want a first run", what, a.actor, a.c.Outcome, a.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer: they wait for the statements in flight to end", what)
		}
	}
}

// TestAGrowingQueueSendsAnotherBatchWhileASlowOneIsInFlight: with grow
// slots, the only ordinary claim slot busy (its statement waits on a
// fence row a transaction holds) and no queue timeout, a full batch of
// waiting claims goes at once (the full batch's slot); when that batch is
// slow too (its shard's fence row is the held one), the next full batch
// goes beside both on a grow slot and is answered while they still
// wait. The batches are counted by the batch-size metric, which a batch
// records as it starts.
func TestAGrowingQueueSendsAnotherBatchWhileASlowOneIsInFlight(t *testing.T) {
	g := growStore(t)
	holder := "tenant/holder"
	release := g.holdSlot(t, holder, func() { mustBegin(t, g.s, request(t, holder, "held", `{}`), store.FirstRun) })
	defer release()
	grow := g.s.GroupCommit().MaxBatch // the default GrowQueue (0: MaxBatch)

	var slow []store.ClaimRequest
	for _, a := range actorsOn(holder, grow) {
		slow = append(slow, request(t, a, "slow", `{}`))
	}
	slowAnswers := beginAll(t, g.s, slow)
	if err := waitForLockWaiters(context.Background(), g.direct, 2); err != nil {
		c, _ := g.s.Queued()
		t.Fatalf("%d claims queued behind the busy slot were not sent (%d still queued): %v", grow, c, err)
	}
	if n, members := g.batches(t, "claim"); n != 1 || members != int64(grow) {
		t.Fatalf("%d batches carrying %d claims started, want 1 carrying %d", n, members, grow)
	}

	var fast []store.ClaimRequest
	for _, a := range actorsOff(holder, grow) {
		fast = append(fast, request(t, a, "fast", `{}`))
	}
	awaitFirstRuns(t, beginAll(t, g.s, fast), grow, "a second batch beside a slow one")
	if n := lockWaiters(t, g.direct); n < 2 {
		t.Fatalf("%d statements still wait on the held fence row, want the slot's and the slow batch's: the second batch went only once a statement in flight gave up", n)
	}
	if n, members := g.batches(t, "claim"); n != 2 || members != int64(2*grow) {
		t.Fatalf("%d batches carrying %d claims, want 2 carrying %d", n, members, 2*grow)
	}

	release()
	awaitFirstRuns(t, slowAnswers, grow, "the slow batch, once the fence row is free")
}

// TestAKeysQueuedClaimWaitsForTheBatchCarryingItsKey: a batch in flight
// carries a key (it waits on its shard's held fence row); a second claim
// of that key queued with claims of other keys stays in the queue when
// they go beside it, and once the first batch ends it is answered after
// it: in progress, the first claim's first run. So the slots beyond the
// first never send one key's requests side by side or out of order.
func TestAKeysQueuedClaimWaitsForTheBatchCarryingItsKey(t *testing.T) {
	g := growStore(t)
	holder := "tenant/holder"
	release := g.holdSlot(t, holder, func() { mustBegin(t, g.s, request(t, holder, "held", `{}`), store.FirstRun) })
	defer release()
	grow := g.s.GroupCommit().MaxBatch // the default GrowQueue (0: MaxBatch)

	on := actorsOn(holder, grow)
	var slow []store.ClaimRequest
	for _, a := range on {
		slow = append(slow, request(t, a, "key", `{}`))
	}
	slowAnswers := beginAll(t, g.s, slow)
	if err := waitForLockWaiters(context.Background(), g.direct, 2); err != nil {
		t.Fatalf("the first %d queued claims were not sent beside the busy slot: %v", grow, err)
	}

	again := request(t, on[0], "key", `{}`) // the same key as slow[0], in its batch
	againAnswer := beginAll(t, g.s, []store.ClaimRequest{again})
	g.waitQueued(t, 1, 0)
	var others []store.ClaimRequest
	for _, a := range actorsOff(holder, grow-1) {
		others = append(others, request(t, a, "key", `{}`))
	}
	awaitFirstRuns(t, beginAll(t, g.s, others), grow-1, "claims of other keys queued with it")
	if n := lockWaiters(t, g.direct); n < 2 {
		t.Fatalf("%d statements still wait on the held fence row, want the slot's and the first batch's: the others went only once a statement in flight gave up", n)
	}
	if c, _ := g.s.Queued(); c != 1 {
		t.Fatalf("%d claims queued after the others were answered, want 1: the second claim of a key in flight went beside it", c)
	}
	if n, members := g.batches(t, "claim"); n != 2 || members != int64(2*grow-1) {
		t.Fatalf("%d batches carrying %d claims, want 2 carrying %d", n, members, 2*grow-1)
	}

	release()
	awaitFirstRuns(t, slowAnswers, grow, "the first claims")
	select {
	case a := <-againAnswer:
		if a.err != nil || a.c.Outcome != store.InFlight {
			t.Fatalf("the second claim of a key: %v %v, want in progress behind the first's first run", a.c.Outcome, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second claim of a key was never sent once its first ended")
	}
	testutil.Eventually(t, 10*time.Second, testutil.Cond(func() bool { c, _ := g.s.Queued(); return c == 0 }))
}

// TestAHotKeysQueuedClaimsDoNotGoOneStatementAtATime: without grow slots
// (the default), retries of one key queued behind the busy slot go as
// they did before the grow slots: once a request's MaxQueueWait runs
// out it goes on a slot of its own, whatever statement carries its key.
// Held to the grow slots' key rule, they went one statement at a time,
// and a thousand retries of one key waiting on its run in flight took
// minutes to reach their wait (gateway's
// TestAThousandWaitersHoldNoDatabaseConnection). Here the key's shard
// fence row is held: its first claim waits on it in the slot, and the
// three queued retries must join it there, four statements waiting on
// the lock, not one.
func TestAHotKeysQueuedClaimsDoNotGoOneStatementAtATime(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	direct := openDSN(t, dsn, newClock())
	g := openGroupCommitWith(t, dsn, newClock(), sqlstore.DefaultGroupCommit)
	g.direct = direct
	hot := "tenant/hot"
	req := request(t, hot, "hot-key", `{}`)
	first := make(chan beginAnswer, 1)
	release := g.holdSlot(t, hot, func() {
		c, err := g.s.Begin(context.Background(), req)
		first <- beginAnswer{hot, c, err}
	})
	defer release()
	retries := beginAll(t, g.s, []store.ClaimRequest{req, req, req})
	if err := waitForLockWaiters(context.Background(), direct, 4); err != nil {
		t.Fatalf("the queued retries of the key did not join its first claim on the lock (%d waiting): %v",
			lockWaiters(t, direct), err)
	}
	release()
	// The lock lets them go in any order: one runs, three see it run.
	outcomes := map[store.Outcome]int{}
	for _, a := range []beginAnswer{<-first, <-retries, <-retries, <-retries} {
		if a.err != nil {
			t.Fatalf("claim: %v", a.err)
		}
		outcomes[a.c.Outcome]++
	}
	if outcomes[store.FirstRun] != 1 || outcomes[store.InFlight] != 3 {
		t.Errorf("outcomes %v, want one first run and three in progress", outcomes)
	}
}
