package gateway_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestAForwardToAPausedOwnerIsAbandonedAndServedByTheNewOwnerOnceTheShardMoves:
// east owns the actor and is paused: its address accepts the forward and
// never answers. West forwards to it and waits. Once east's shard moves
// to west (the fence first, then the directory), west abandons the
// forward and routes the call again: 201 from west, one upstream run,
// instead of a 504 when the forward's timeout passes (the endpoint's
// upstream timeout plus slack, long after the failover).
func TestAForwardToAPausedOwnerIsAbandonedAndServedByTheNewOwnerOnceTheShardMoves(t *testing.T) {
	paused, read := testutil.SilentAddr(t)
	st := openStore(t, 8)
	health := &turningHealth{states: map[string]failover.RegionState{}}
	east, west := startRegions(t, st, "east", regionsOptions{endpoint: "    failover: transfer\n",
		health: func(string) gateway.RegionHealth { return health },
		urlOf: func(viewer, name, real string) string {
			if viewer == "west" && name == "east" {
				return "http://" + paused
			}
			return real
		}})
	done := send(t, post(t, west.url+"/v1/things", token(t, "alice"), "owner-paused", routeBody))
	select {
	case a := <-done:
		t.Fatalf("answered %s before the forward reached the paused owner", describe(a.status, a.header, a.body))
	case <-read:
	}
	servedByWestOnceEastFailed(t, st, health, east, west, done)
}

// TestAForwardToASlowOwnerThatKeepsItsShardIsNotAbandoned: the directory
// changes (another shard moves) while the forward to east waits: the
// forward is not abandoned, and east's answer is relayed.
func TestAForwardToASlowOwnerThatKeepsItsShardIsNotAbandoned(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	st := openStore(t, 8)
	east, west := startRegions(t, st, "east", regionsOptions{upstream: func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { close(entered) })
			<-release
			w.WriteHeader(http.StatusCreated)
		})
	}})
	done := send(t, post(t, west.url+"/v1/things", token(t, "alice"), "owner-slow", routeBody))
	<-entered
	west.owners.set(actorShard+1, "west", 7, gateway.ShardFailedOver) // another shard moves
	west.owners.set(actorShard, "east", 1, gateway.ShardActive)       // this one is re-announced as it was
	close(release)
	a := <-done
	if a.status != http.StatusCreated || a.header.Get(gateway.HeaderRegion) != "east" {
		t.Errorf("got %s from region %q, want east's 201 relayed", describe(a.status, a.header, a.body), a.header.Get(gateway.HeaderRegion))
	}
	if east.upstream.Load() != 1 || west.upstream.Load() != 0 {
		t.Errorf("east's upstream ran %d times, west's %d; want 1 and 0", east.upstream.Load(), west.upstream.Load())
	}
}
