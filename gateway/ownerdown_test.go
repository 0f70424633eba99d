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
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// turningHealth is a liveness view whose states the test sets; every
// region starts healthy.
type turningHealth struct {
	mu     sync.Mutex
	states map[string]failover.RegionState
}

func (h *turningHealth) State(r string) failover.RegionState {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.states[r]; ok {
		return s
	}
	return failover.Healthy
}

func (h *turningHealth) set(r string, s failover.RegionState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.states[r] = s
}

// deadEast starts east and west with east owning the actor, east's
// address refusing every connection in west's topology (east's process is
// gone), west's health view and clock the returned ones.
func deadEast(t *testing.T) (east, west *regionGW, health *turningHealth, clk *clock.Fake, st *sqlstore.Store) {
	t.Helper()
	return deadEastAt(t, "http://"+testutil.RefusingAddr(t))
}

// deadEastAt is deadEast with east at dead in west's topology.
func deadEastAt(t *testing.T, dead string) (east, west *regionGW, health *turningHealth, clk *clock.Fake, st *sqlstore.Store) {
	t.Helper()
	st = openStore(t, 8)
	health = &turningHealth{states: map[string]failover.RegionState{}}
	clk = clock.NewFake(time.Now())
	east, west = startRegions(t, st, "east", regionsOptions{endpoint: "    failover: transfer\n",
		health: func(string) gateway.RegionHealth { return health }, clock: clk,
		urlOf: func(viewer, name, real string) string {
			if viewer == "west" && name == "east" {
				return dead
			}
			return real
		}})
	return east, west, health, clk, st
}

// held fails the test if the request behind done is answered before it is
// held: the hold's bound and its health re-read on clk, past the base
// waiters (the gateways' own loops).
func held(t *testing.T, clk *clock.Fake, base int, done <-chan answer) {
	t.Helper()
	holding := make(chan struct{})
	go func() { clk.BlockUntil(base + 2); close(holding) }()
	select {
	case a := <-done:
		t.Fatalf("answered %s at once: the refused forward was not held", describe(a.status, a.header, a.body))
	case <-holding:
	}
	select {
	case a := <-done:
		t.Fatalf("answered %s while held, before the owner went down or the hold's bound passed", describe(a.status, a.header, a.body))
	default:
	}
}

// TestAForwardToADeadOwnerIsHeldAndServedByTheNewOwnerOnceItsShardMoves:
// east died; its liveness key has not expired yet, so every view still
// calls it healthy and west forwards to it, and the connection is
// refused. Instead of sending the client away for a Retry-After second
// (its next attempt would come up to a second after the failover), west
// holds the request until east turns suspect, then until its shard moves
// to west, and serves it: 201 from west, one upstream call.
func TestAForwardToADeadOwnerIsHeldAndServedByTheNewOwnerOnceItsShardMoves(t *testing.T) {
	t.Run("refused", func(t *testing.T) { heldUntilMoved(t, deadEast) })
	// A TCP proxy in front of the dead process (the drills' peer links)
	// reads the request and closes: the answer is lost, the request may
	// have reached east as far as west can tell, and the new owner's
	// claim is the retry under the same key.
	// East came back after an earlier failure (recovering), took its
	// shard back, and died again (a crash loop): the view still calls it
	// alive, so the forward is held until its new key goes too.
	t.Run("refused by a recovering owner", func(t *testing.T) {
		heldUntilMoved(t, func(t *testing.T) (*regionGW, *regionGW, *turningHealth, *clock.Fake, *sqlstore.Store) {
			east, west, health, clk, st := deadEast(t)
			health.set("east", failover.Recovering)
			return east, west, health, clk, st
		})
	})
	t.Run("closed by a proxy after the request was written", func(t *testing.T) {
		heldUntilMoved(t, func(t *testing.T) (*regionGW, *regionGW, *turningHealth, *clock.Fake, *sqlstore.Store) {
			return deadEastAt(t, "http://"+testutil.ClosingAddr(t))
		})
	})
}

func heldUntilMoved(t *testing.T, start func(*testing.T) (*regionGW, *regionGW, *turningHealth, *clock.Fake, *sqlstore.Store)) {
	east, west, health, clk, s := start(t)
	base := clk.Waiters()
	done := send(t, post(t, west.url+"/v1/things", token(t, "alice"), "owner-died", routeBody))
	held(t, clk, base, done)
	servedByWestOnceEastFailed(t, s, health, east, west, done)
}

// servedByWestOnceEastFailed fails east over to west (its state, the SQL
// fence, both directory caches) and checks that the request behind done
// is then answered 201 by west, its upstream run once and east reached
// never.
func servedByWestOnceEastFailed(t *testing.T, s *sqlstore.Store, health *turningHealth, east, west *regionGW, done <-chan answer) {
	t.Helper()
	health.set("east", failover.Failed) // the key expired; the failover begins
	if err := s.MoveFence(context.Background(), fencing.Move{Shard: actorShard, From: 1, To: "west",
		Operator: "test", Reason: "east failed"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*regionGW{east, west} {
		r.owners.set(actorShard, "west", 2, gateway.ShardFailedOver)
	}
	a := <-done
	if a.status != http.StatusCreated || a.header.Get(gateway.HeaderRegion) != "west" {
		t.Errorf("got %s from region %q, want 201 from west, the new owner", describe(a.status, a.header, a.body), a.header.Get(gateway.HeaderRegion))
	}
	if west.upstream.Load() != 1 || east.received.Load() != 0 {
		t.Errorf("west's upstream ran %d times, east received %d; want 1 and 0", west.upstream.Load(), east.received.Load())
	}
}

// TestARefusedForwardToAnOwnerThatStaysHealthyIsAnswered503WhenTheHoldEnds:
// the owner's address refuses, but its liveness key stays (a link that
// resets while the region lives): when the hold's bound passes on west's
// clock, west answers as it did before the hold, 503 region-unreachable,
// and nothing ran anywhere.
func TestARefusedForwardToAnOwnerThatStaysHealthyIsAnswered503WhenTheHoldEnds(t *testing.T) {
	east, west, _, clk, s := deadEast(t)
	base := clk.Waiters()
	done := send(t, post(t, west.url+"/v1/things", token(t, "alice"), "owner-lives", routeBody))
	held(t, clk, base, done)
	clk.Advance(2500 * time.Millisecond)
	a := <-done
	if a.status != http.StatusServiceUnavailable || problemType(t, a.body) != "region-unreachable" || a.header.Get("Retry-After") == "" {
		t.Errorf("got %s, want 503 region-unreachable with Retry-After", describe(a.status, a.header, a.body))
	}
	if west.upstream.Load()+east.received.Load() != 0 {
		t.Errorf("west's upstream ran %d, east received %d; want nothing run anywhere", west.upstream.Load(), east.received.Load())
	}
	assertNoRecord(t, s, "owner-lives")
}
