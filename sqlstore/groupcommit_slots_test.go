package sqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// TestGroupCommitConfigErrorsNameTheField: bad settings are refused with
// the field's name and why; the defaults are valid.
func TestGroupCommitConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		g    sqlstore.GroupCommit
		want string
	}{
		{sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: -1}, "group_commit.max_batch: must be between 0 (off) and 1000, got -1"},
		{sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: 5000}, "group_commit.max_batch"},
		{sqlstore.GroupCommit{MaxInFlight: -1}, "group_commit.max_in_flight: must not be negative"},
		{sqlstore.GroupCommit{MaxBatch: 8}, "group_commit.max_in_flight: must be at least 1"},
		{sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: 8, FullBatchSlots: -1}, "group_commit.full_batch_slots: must not be negative"},
		{sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: 8, MaxQueueWait: -time.Second}, "group_commit.max_queue_wait: must not be negative"},
	} {
		cfg := sqlstore.DefaultConfig()
		cfg.DSN, cfg.GroupCommit = "postgres://x", tc.g
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.g, err, tc.want)
		}
	}
	cfg := sqlstore.DefaultConfig()
	cfg.DSN = "postgres://x"
	if err := cfg.Validate(); err != nil || cfg.GroupCommit != sqlstore.DefaultGroupCommit {
		t.Errorf("defaults: %v, %+v", err, cfg.GroupCommit)
	}
	for _, off := range []sqlstore.GroupCommit{{}, {MaxInFlight: 4, MaxBatch: 1}} {
		cfg.GroupCommit = off
		if err := cfg.Validate(); err != nil {
			t.Errorf("batching off (%+v): %v", off, err)
		}
	}
}

// TestGroupCommitRoundTrips: with batching on, a request that finds a
// free slot sends the single statements, unchanged (a first run: the
// claim and the finish); claims or finishes queued behind a busy slot go
// as one statement together, and queued replays are answered by theirs.
func TestGroupCommitRoundTrips(t *testing.T) {
	ctx := context.Background()
	tracer := &queryCounter{}
	dsn := pgtest.NewDatabase(t)
	g := openGroupCommit(t, dsn, dsn, newClock(), tracer)
	records := func(sqls []string) (all, batches []string) {
		for _, q := range sqls {
			if strings.Contains(q, "idempotency_records") {
				all = append(all, q)
				if strings.Contains(q, "unnest(") {
					batches = append(batches, q)
				}
			}
		}
		return all, batches
	}
	oneFlat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got, batches := records(tracer.during(t, func() {
		c := mustBegin(t, g.s, request(t, "tenant/alone", "key", `{}`), store.FirstRun)
		if err := g.s.Finish(ctx, c.Lease, completed(`{}`)); err != nil {
			t.Fatal(err)
		}
	}))
	if len(got) != 2 || len(batches) != 0 || got[0] != oneFlat(sqlstore.ClaimSQL) || got[1] != oneFlat(sqlstore.FinishSQL) {
		t.Fatalf("a first run alone sent %d statements (%d batches), want the claim and the finish:\n%s",
			len(got), len(batches), strings.Join(got, "\n"))
	}

	holder := "tenant/holder"
	var reqs []store.ClaimRequest
	for _, a := range actorsOff(holder, 5) {
		reqs = append(reqs, request(t, a, "key", `{}`))
	}
	var cs []store.Claim
	got, batches = records(tracer.during(t, func() {
		var errs []error
		cs, errs = batchClaims(t, g, holder, reqs)
		for i, err := range errs {
			if err != nil || cs[i].Outcome != store.FirstRun {
				t.Fatalf("claim %d: %v %v", i, cs[i].Outcome, err)
			}
		}
	}))
	if len(got) != 2 || len(batches) != 1 {
		t.Fatalf("the holder's claim and 5 queued claims sent %d statements (%d batches), want 2 (1 batch):\n%s",
			len(got), len(batches), strings.Join(got, "\n"))
	}
	leases := make([]*store.Lease, len(cs))
	for i, c := range cs {
		leases[i] = c.Lease
	}
	got, batches = records(tracer.during(t, func() {
		for i, err := range batchFinishes(t, g, holder, leases) {
			if err != nil {
				t.Fatalf("finish %d: %v", i, err)
			}
		}
	}))
	// The holder's claim (alone), its finish, and one batch.
	if len(got) != 3 || len(batches) != 1 {
		t.Fatalf("5 finishes queued behind one sent %d statements (%d batches), want 3 (1 batch):\n%s",
			len(got), len(batches), strings.Join(got, "\n"))
	}
	// Replays in a batch are answered by it, as claimSQL answers one: the
	// batch reads the records it did not insert.
	got, batches = records(tracer.during(t, func() {
		cs, errs := batchClaims(t, g, holder, reqs)
		for i, err := range errs {
			if err != nil || cs[i].Outcome != store.Replayed {
				t.Fatalf("replay %d: %v %v", i, cs[i].Outcome, err)
			}
		}
	}))
	if len(got) != 2 || len(batches) != 1 {
		t.Fatalf("the holder's claim and 5 queued replays sent %d statements (%d batches), want 2 (1 batch):\n%s",
			len(got), len(batches), strings.Join(got, "\n"))
	}
}

// TestAFullBatchGoesWithoutWaitingForASlot: with FullBatchSlots, MaxBatch
// waiting claims go at once as one statement while the only slot is
// still busy; a request short of a full batch still waits.
func TestAFullBatchGoesWithoutWaitingForASlot(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	g := openGroupCommit(t, dsn, dsn, newClock(), nil)
	full := openGroupCommitWith(t, dsn, newClock(), sqlstore.GroupCommit{MaxInFlight: 1, MaxBatch: 3, FullBatchSlots: 1})
	g.s = full.s
	g.rd = full.rd
	holder := "tenant/holder"
	actors := actorsOff(holder, 4)
	release := g.holdSlot(t, holder, func() { mustBegin(t, g.s, request(t, holder, "holder", `{}`), store.FirstRun) })
	defer release()
	errc := make(chan error, 4)
	claim := func(a string) {
		go func() {
			c, err := g.s.Begin(ctx, request(t, a, "key", `{}`))
			if err == nil && c.Outcome != store.FirstRun {
				err = fmt.Errorf("%s: %v", a, c.Outcome)
			}
			errc <- err
		}()
	}
	claim(actors[0])
	g.waitQueued(t, 1, 0) // one request waits: short of a full batch
	for _, a := range actors[1:3] {
		claim(a)
	}
	// The third makes the batch full: it goes while the holder still
	// holds the slot.
	for range 3 {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a full batch waited for the busy slot")
		}
	}
	if n, members := g.batches(t, "claim"); n != 1 || members != 3 {
		t.Fatalf("%d batches carrying %d claims, want 1 carrying 3", n, members)
	}
	claim(actors[3])
	g.waitQueued(t, 1, 0) // alone in the queue again: it waits for the slot
	release()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestAStalledSlotDelaysTheClaimsQueuedBehindItByAtMostMaxQueueWait: the
// only claim slot's statement waits on a lock a long transaction holds
// (its shard's fence row, locked FOR UPDATE); claims of other shards that
// queued behind it go on a slot of their own once they waited
// MaxQueueWait, and all of them are first runs while that transaction is
// still open, instead of waiting for its end.
func TestAStalledSlotDelaysTheClaimsQueuedBehindItByAtMostMaxQueueWait(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	gc := forcedBatching
	gc.MaxQueueWait = 20 * time.Millisecond
	direct := openDSN(t, dsn, newClock()) // migrates
	g := openGroupCommitWith(t, dsn, newClock(), gc)
	g.direct = direct
	holder := "tenant/holder"
	release := g.holdSlot(t, holder, func() { mustBegin(t, g.s, request(t, holder, "held", `{}`), store.FirstRun) })
	defer release()
	actors := actorsOff(holder, 3)
	var reqs []store.ClaimRequest
	for _, a := range actors {
		reqs = append(reqs, request(t, a, "queued", `{}`))
	}
	done := make(chan []error, 1)
	go func() { _, errs := claimAll(g.s, reqs); done <- errs }()
	select {
	case errs := <-done:
		for i, err := range errs {
			if err != nil {
				t.Errorf("claim of %s: %v", actors[i], err)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the claims queued behind a stalled slot still wait: they wait for the lock's holder to end")
	}
	for _, r := range reqs {
		if rec, err := g.direct.Read(context.Background(), r.Scope); err != nil || rec.State != idempotency.InProgress {
			t.Errorf("%s: %v %v, want claimed while the slot's statement still waits", r.Scope.Actor, rec.State, err)
		}
	}
}
