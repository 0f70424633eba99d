package ownership_test

import (
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/ownership"
)

// TestTheBatchesOfALargeMoveAreInFlightAtOnce: a move of more shards than
// one etcd transaction takes (a region's failover: 342 shards, four
// batches) starts every batch before waiting for any batch's SQL fences,
// so the moves take about one batch's time rather than one per hundred
// shards. The test hook holds each shard's SQL fence step until every
// batch has been put in FENCING (a mover running its batches one after
// the other never gets there: the hook gives up after a bound and the
// count shows it); each shard still ends moved once, etcd and SQL
// agreeing.
func TestTheBatchesOfALargeMoveAreInFlightAtOnce(t *testing.T) {
	ctx := ctxT(t)
	const shards = 750 // 250 homed in us-east: three batches of at most 100
	d, s, _ := setup(t, shards)
	plans := failoverPlans(ctx, t, d, "us-east", "eu-west")
	batches := (len(plans) + 99) / 100
	if batches < 3 {
		t.Fatalf("%d plans make %d batches, want at least 3", len(plans), batches)
	}
	var (
		mu           sync.Mutex
		fencing      int // batches put in FENCING so far
		all          = make(chan struct{})
		gaveUp       bool // a hook stopped waiting: the batches did not overlap
		atFirstFence = -1 // batches in FENCING when the first SQL fence step went on
		fencedShards int  // SQL fences moved
	)
	d.SetAfterStep(func(step string) error {
		switch step {
		case "fencing":
			mu.Lock()
			if fencing++; fencing == batches {
				close(all)
			}
			mu.Unlock()
		case "fenced":
			mu.Lock()
			wait := !gaveUp
			mu.Unlock()
			if wait {
				select {
				case <-all:
				case <-time.After(5 * time.Second): // only a sequential mover gets here
					mu.Lock()
					gaveUp = true
					mu.Unlock()
				}
			}
			mu.Lock()
			if atFirstFence < 0 {
				atFirstFence = fencing
			}
			fencedShards++
			mu.Unlock()
		}
		return nil
	})
	got, errs := d.MoveBatch(ctx, plans, "controller", "us-east down", 64)
	d.SetAfterStep(nil)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", plans[i].Entry.Shard, err)
		}
		if got[i].Owner != "eu-west" || got[i].Epoch != plans[i].Entry.Epoch+1 || got[i].State != ownership.FailedOver {
			t.Fatalf("shard %d moved to %s, want eu-west FAILED_OVER at epoch %d", plans[i].Entry.Shard, got[i], plans[i].Entry.Epoch+1)
		}
	}
	if atFirstFence != batches {
		t.Errorf("%d of %d batches were in FENCING when the first SQL fence moved, want all (batches in flight at once)",
			atFirstFence, batches)
	}
	if fencedShards != len(plans) {
		t.Errorf("%d SQL fences moved for %d shards, want one each", fencedShards, len(plans))
	}
	agree(t, d, s)
}
