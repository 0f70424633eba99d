package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
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

// TestAHeldRequestIsRefusedWhenTheHoldEndsOnTheGatewaysClock: east, the
// actor's owner, has failed and its shard is never moved. West holds the
// request, and the hold is timed by west's injected clock: nothing is
// answered until the test moves that clock past the hold's bound, and
// then the request is refused (503, nothing run) as an unsettled shard
// is. A hold on the real clock would never register with the test's
// clock, and the test would wait for it in vain.
func TestAHeldRequestIsRefusedWhenTheHoldEndsOnTheGatewaysClock(t *testing.T) {
	s := openStore(t, 8)
	clk := clock.NewFake(time.Now())
	health := &failingRegion{dead: "east", asked: make(chan struct{})}
	east, west := startRegions(t, s, "east", regionsOptions{endpoint: "    failover: transfer\n",
		health: func(string) gateway.RegionHealth { return health }, clock: clk})
	type answer struct {
		status int
		h      http.Header
		b      string
	}
	base := clk.Waiters() // the gateways' own loops on the clock
	done := make(chan answer, 1)
	go func() {
		st, h, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "never-settles", routeBody))
		done <- answer{st, h, b}
	}()
	<-health.asked
	clk.BlockUntil(base + 2) // the hold's bound and its health re-read
	select {
	case a := <-done:
		t.Fatalf("answered %s before the hold's bound passed on the gateway's clock", describe(a.status, a.h, a.b))
	default:
	}
	clk.Advance(2 * time.Second)
	a := <-done
	if a.status != http.StatusServiceUnavailable {
		t.Errorf("got %s, want 503: the shard never settled", describe(a.status, a.h, a.b))
	}
	if west.upstream.Load() != 0 || east.received.Load() != 0 {
		t.Errorf("west's upstream ran %d times, east received %d; want 0 and 0", west.upstream.Load(), east.received.Load())
	}
}
