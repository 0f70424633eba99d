package sqlstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/store"
)

// batchFinishes holds the finish slot with the finish of a claim of
// holder, queues the finishes of leases behind it, releases it, and
// returns their errors: they go as batches.
func batchFinishes(t *testing.T, g gcStore, holder string, leases []*store.Lease) []error {
	t.Helper()
	ctx := context.Background()
	hc := mustBegin(t, g.s, request(t, holder, "holder-finish-"+t.Name(), `{}`), store.FirstRun)
	release := g.holdSlot(t, holder, func() {
		if err := g.s.Finish(ctx, hc.Lease, completed(`{}`)); err != nil {
			t.Errorf("holder finish: %v", err)
		}
	})
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() { errs[i] = g.s.Finish(ctx, l, completed(`{"n":"`+l.Scope.Actor+`"}`)) })
	}
	g.waitQueued(t, 0, len(leases))
	release()
	wg.Wait()
	return errs
}

// claimEach claims one fresh key per actor, one at a time (alone).
func claimEach(t *testing.T, g gcStore, actors []string) ([]store.ClaimRequest, []*store.Lease) {
	t.Helper()
	var (
		reqs   []store.ClaimRequest
		leases []*store.Lease
	)
	for _, a := range actors {
		r := request(t, a, "key", `{}`)
		reqs = append(reqs, r)
		leases = append(leases, mustBegin(t, g.s, r, store.FirstRun).Lease)
	}
	return reqs, leases
}

// TestABatchedFinishWhoseLeaseWasTakenOverLosesOwnershipAndTheOthersRecord:
// one finish of a batch holds a lease taken over since: it gets
// ErrLostOwnership and changes nothing, the others record their results,
// and each replays its own afterwards.
func TestABatchedFinishWhoseLeaseWasTakenOverLosesOwnershipAndTheOthersRecord(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	dsn := pgtest.NewDatabase(t)
	g := openGroupCommit(t, dsn, dsn, clk, nil)
	holder := "tenant/holder"
	reqs, leases := claimEach(t, g, actorsOff(holder, 5))
	clk.Advance(31 * time.Second) // every lease expired: the first key is taken over
	taken := mustBegin(t, g.direct, reqs[0], store.TakenOver)
	errs := batchFinishes(t, g, holder, leases)
	if n, members := g.batches(t, "finish"); n == 0 || members <= n {
		t.Fatalf("%d finish batches carrying %d finishes: the finishes never went together", n, members)
	}
	if !errors.Is(errs[0], store.ErrLostOwnership) {
		t.Errorf("finish of the taken-over lease: %v, want ErrLostOwnership", errs[0])
	}
	if rec, err := g.direct.Read(ctx, reqs[0].Scope); err != nil || rec.State != idempotency.InProgress ||
		rec.LeaseOwner != taken.Lease.Owner || rec.Version != taken.Lease.Version {
		t.Errorf("taken-over record %s v%d owner %q (%v): want the new owner's, untouched", rec.State, rec.Version, rec.LeaseOwner, err)
	}
	for i, r := range reqs[1:] {
		if errs[1+i] != nil {
			t.Errorf("finish %d: %v", 1+i, errs[1+i])
			continue
		}
		l := leases[1+i]
		c := mustBegin(t, g.direct, r, store.Replayed)
		if want := `{"n":"` + r.Scope.Actor + `"}`; string(c.Record.Snapshot.Body) != want || c.Record.Version != 2 {
			t.Errorf("%s replays %q v%d, want %s v2", r.Scope.Actor, c.Record.Snapshot.Body, c.Record.Version, want)
		}
		if l.Version != c.Record.Version || !l.RecordExpiresAt.Equal(c.Record.ExpiresAt) || !l.ExpiresAt.IsZero() {
			t.Errorf("%s: lease v%d expiry %v / %v after the batch, record v%d expiry %v", r.Scope.Actor,
				l.Version, l.RecordExpiresAt, l.ExpiresAt, c.Record.Version, c.Record.ExpiresAt)
		}
	}
}
