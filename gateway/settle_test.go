package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
)

// failingRegion is a liveness view in which region dead is failed and
// every other region healthy; the first time it is asked about dead it
// closes asked.
type failingRegion struct {
	dead  string
	once  sync.Once
	asked chan struct{}
}

func (f *failingRegion) State(r string) failover.RegionState {
	if r != f.dead {
		return failover.Healthy
	}
	f.once.Do(func() { close(f.asked) })
	return failover.Failed
}

// TestARequestArrivingWhileAFailoverIsPendingIsServedOnceTheMoveLands:
// east, the actor's owner, has failed and its shard is not moved yet, so
// west cannot serve the request when it arrives. The failover's move
// lands while the request is at west (the test moves the fence and the
// directory cache once west has looked at east's health): west serves it
// as the new owner, 201 with one upstream call, instead of sending the
// client away for a Retry-After second that ends after the move. Nothing
// reaches east.
func TestARequestArrivingWhileAFailoverIsPendingIsServedOnceTheMoveLands(t *testing.T) {
	s := openStore(t, 8)
	health := &failingRegion{dead: "east", asked: make(chan struct{})}
	east, west := startRegions(t, s, "east", regionsOptions{endpoint: "    failover: transfer\n",
		health: func(string) gateway.RegionHealth { return health }})
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		<-health.asked
		if err := s.MoveFence(context.Background(), fencing.Move{Shard: actorShard, From: 1, To: "west",
			Operator: "test", Reason: "east failed"}); err != nil {
			t.Error(err)
			return
		}
		for _, r := range []*regionGW{east, west} {
			r.owners.set(actorShard, "west", 2, gateway.ShardFailedOver)
		}
	}()
	st, h, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "pending-failover", routeBody))
	<-moved
	if st != http.StatusCreated || h.Get(gateway.HeaderRegion) != "west" {
		t.Errorf("got %s from region %q, want 201 from west, the new owner", describe(st, h, b), h.Get(gateway.HeaderRegion))
	}
	if west.upstream.Load() != 1 || east.received.Load() != 0 {
		t.Errorf("west's upstream ran %d times, east received %d; want 1 and 0", west.upstream.Load(), east.received.Load())
	}
}
