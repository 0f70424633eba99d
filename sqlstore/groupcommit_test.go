package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/store"
)

// batchClaims holds the claim slot with a claim of holder, queues reqs
// behind it, releases it, and returns reqs' answers: they go as batches.
func batchClaims(t *testing.T, g gcStore, holder string, reqs []store.ClaimRequest) ([]store.Claim, []error) {
	t.Helper()
	release := g.holdSlot(t, holder, func() {
		if _, err := g.s.Begin(context.Background(), request(t, holder, "holder-"+t.Name(), `{}`)); err != nil {
			t.Errorf("holder claim: %v", err)
		}
	})
	type answer struct {
		cs   []store.Claim
		errs []error
	}
	done := make(chan answer, 1)
	go func() { cs, errs := claimAll(g.s, reqs); done <- answer{cs, errs} }()
	g.waitQueued(t, len(reqs), 0)
	release()
	a := <-done
	return a.cs, a.errs
}

// TestBatchedFirstRunsHaveOneWinnerPerKeyWithTheStoredRecord: claims that
// queue behind a busy slot go as one statement; each key still has
// exactly one first run (its racers see it in flight), and each winner's
// record and lease are exactly the stored row, as on the single path.
func TestBatchedFirstRunsHaveOneWinnerPerKeyWithTheStoredRecord(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	g := openGroupCommit(t, dsn, dsn, newClock(), nil)
	holder := "tenant/holder"
	var reqs []store.ClaimRequest
	for i, a := range actorsOff(holder, 8) {
		r := request(t, a, "key-"+a, `{"amount":1}`)
		if i%2 == 0 {
			r.FirstSent, r.ReplayTTL = time.Date(2026, 11, 30, 11, 0, 0, 123456000, time.UTC), time.Hour
		}
		reqs = append(reqs, r, r, r) // three racers per key
	}
	cs, errs := batchClaims(t, g, holder, reqs)
	if n, members := g.batches(t, "claim"); n == 0 || members <= n {
		t.Fatalf("%d claim batches carrying %d claims: the claims never went together", n, members)
	}
	wins := map[string]store.Claim{}
	for i, c := range cs {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		k := reqs[i].Scope.Actor
		switch c.Outcome {
		case store.FirstRun:
			if _, dup := wins[k]; dup {
				t.Fatalf("key of %s claimed twice", k)
			}
			wins[k] = c
		case store.InFlight:
		default:
			t.Errorf("claim %d: outcome %v, want first_run or in_progress", i, c.Outcome)
		}
	}
	if len(wins) != 8 {
		t.Fatalf("%d keys won, want 8", len(wins))
	}
	for i := 0; i < len(reqs); i += 3 {
		r := reqs[i]
		c := wins[r.Scope.Actor]
		stored, err := g.s.Read(ctx, r.Scope)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(stored, c.Record); d != "" {
			t.Errorf("%s: claimed record differs from the stored one (-stored +claimed):\n%s", r.Scope.Actor, d)
		}
		l := c.Lease
		if l.Version != stored.Version || l.Owner != stored.LeaseOwner || l.OperationID != stored.OperationID ||
			!l.ExpiresAt.Equal(stored.LeaseExpiresAt) || !l.RecordExpiresAt.Equal(stored.ExpiresAt) {
			t.Errorf("%s: lease %+v does not match the stored record %+v", r.Scope.Actor, l, stored)
		}
	}
}

// TestABatchMemberOfAStaleEpochIsFencedAndTheOthersClaim: one batch holds
// a claim whose token's epoch is no longer its shard's, and one whose
// region does not own its shard: those two get *fencing.StaleEpochError
// and write nothing, as alone; the rest of the batch claims.
func TestABatchMemberOfAStaleEpochIsFencedAndTheOthersClaim(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	g := openGroupCommit(t, dsn, dsn, newClock(), nil)
	holder := "tenant/holder"
	actors := actorsOff(holder, 6)
	var reqs []store.ClaimRequest
	for _, a := range actors {
		reqs = append(reqs, request(t, a, "key", `{}`))
	}
	moved := reqs[0]
	if err := g.direct.MoveFence(ctx, fencing.Move{Shard: moved.Token.Shard, From: 1, To: "eu-west", Operator: "t", Reason: "drain"}); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs[1:] {
		if r.Token.Shard == moved.Token.Shard {
			reqs[1+i].Token.Epoch = 2 // the shard's new epoch: still eu-west's, not ours
		}
	}
	reqs[1].Token.Region = "ap-south" // not the owner of its shard
	cs, errs := batchClaims(t, g, holder, reqs)
	if n, members := g.batches(t, "claim"); n == 0 || members <= n {
		t.Fatalf("%d claim batches carrying %d claims: the claims never went together", n, members)
	}
	for i, r := range reqs {
		var stale *fencing.StaleEpochError
		fenced := r.Token.Shard == moved.Token.Shard || i == 1
		switch {
		case fenced && !errors.As(errs[i], &stale):
			t.Errorf("claim %d (shard %d, epoch %d, region %s): %v %v, want *fencing.StaleEpochError",
				i, r.Token.Shard, r.Token.Epoch, r.Token.Region, cs[i].Outcome, errs[i])
		case fenced:
			if _, err := g.direct.Read(ctx, r.Scope); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("claim %d: a fenced claim left a record (%v)", i, err)
			}
		case errs[i] != nil || cs[i].Outcome != store.FirstRun:
			t.Errorf("claim %d: %v %v, want first_run", i, cs[i].Outcome, errs[i])
		}
	}
}

// TestABatchWithRacersAndKnownKeysAnswersAsTheSinglePath: a batch never
// carries two claims of one key; two racers on a fresh key give one first
// run and one in-flight answer, a claim of a finished key replays it, a
// claim of a key in flight sees it in flight, and a claim of a key whose
// lease ended takes it over, as on the single path.
func TestABatchWithRacersAndKnownKeysAnswersAsTheSinglePath(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	clk := newClock()
	g := openGroupCommit(t, dsn, dsn, clk, nil)
	holder := "tenant/holder"
	actors := actorsOff(holder, 4)
	done := request(t, actors[0], "done", `{}`)
	c := mustBegin(t, g.direct, done, store.FirstRun)
	if err := g.direct.Finish(ctx, c.Lease, completed(`{"paid":true}`)); err != nil {
		t.Fatal(err)
	}
	running := request(t, actors[1], "running", `{}`)
	running.Lease = time.Hour
	mustBegin(t, g.direct, running, store.FirstRun)
	crashed := request(t, actors[3], "crashed", `{}`)
	crashed.Lease = time.Second
	mustBegin(t, g.direct, crashed, store.FirstRun)
	clk.Advance(2 * time.Second) // the crashed worker's lease ends
	fresh := request(t, actors[2], "fresh", `{}`)
	reqs := []store.ClaimRequest{fresh, done, fresh, running, crashed}
	cs, errs := batchClaims(t, g, holder, reqs)
	if n, members := g.batches(t, "claim"); n == 0 || members <= n {
		t.Fatalf("%d claim batches carrying %d claims: the claims never went together", n, members)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	got := []store.Outcome{cs[0].Outcome, cs[1].Outcome, cs[2].Outcome, cs[3].Outcome, cs[4].Outcome}
	if (got[0] == store.FirstRun) == (got[2] == store.FirstRun) || got[0] != store.FirstRun && got[0] != store.InFlight ||
		got[2] != store.FirstRun && got[2] != store.InFlight {
		t.Errorf("racers on one key: %v and %v, want one first_run and one in_progress", got[0], got[2])
	}
	if got[1] != store.Replayed || string(cs[1].Record.Snapshot.Body) != `{"paid":true}` {
		t.Errorf("finished key: %v %q, want its replay", got[1], cs[1].Record.Snapshot.Body)
	}
	if got[3] != store.InFlight {
		t.Errorf("key in flight: %v, want in_progress", got[3])
	}
	if got[4] != store.TakenOver {
		t.Fatalf("key whose lease ended: %v, want takeover", got[4])
	}
	if rec, err := g.direct.Read(ctx, crashed.Scope); err != nil || rec.Version != 2 || rec.Attempts != 2 ||
		rec.LeaseOwner != cs[4].Lease.Owner {
		t.Errorf("taken-over record v%d attempts %d owner %q (%v), want the takeover's, at v2", rec.Version, rec.Attempts, rec.LeaseOwner, err)
	}
}

// TestAQueuedClaimWhoseContextEndsLeavesTheQueue: a claim waiting for a
// batch whose caller gives up returns its context's error, not an
// ambiguous commit, and is not sent; the others go on.
func TestAQueuedClaimWhoseContextEndsLeavesTheQueue(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	g := openGroupCommit(t, dsn, dsn, newClock(), nil)
	holder := "tenant/holder"
	actors := actorsOff(holder, 3)
	release := g.holdSlot(t, holder, func() { mustBegin(t, g.s, request(t, holder, "holder", `{}`), store.FirstRun) })
	gone, cancel := context.WithCancel(ctx)
	errc := make(chan error, 3)
	go func() { _, err := g.s.Begin(gone, request(t, actors[0], "gone", `{}`)); errc <- err }()
	for _, a := range actors[1:] {
		go func() { _, err := g.s.Begin(ctx, request(t, a, "stays", `{}`)); errc <- err }()
	}
	g.waitQueued(t, 3, 0)
	cancel()
	g.waitQueued(t, 2, 0)
	release()
	var cancelled int
	for range 3 {
		if err := <-errc; errors.Is(err, context.Canceled) {
			cancelled++
			if errors.As(err, new(*store.AmbiguousCommitError)) {
				t.Errorf("the cancelled claim, never sent, reports an ambiguous commit: %v", err)
			}
		} else if err != nil {
			t.Errorf("a claim that stayed: %v", err)
		}
	}
	if cancelled != 1 {
		t.Errorf("%d claims cancelled, want 1", cancelled)
	}
	if _, err := g.direct.Read(ctx, request(t, actors[0], "gone", `{}`).Scope); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the cancelled claim was sent: %v", err)
	}
	for _, a := range actors[1:] {
		if rec, err := g.direct.Read(ctx, request(t, a, "stays", `{}`).Scope); err != nil || rec.State != idempotency.InProgress {
			t.Errorf("%s: %v %v, want claimed", a, rec.State, err)
		}
	}
}
