package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/sqlstore"
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

// TestAForwardToALiveOwnerIsNotAbandoned: the forward to east waits (its
// upstream is slow) while the directory changes: another shard moves, or
// this very shard moves to west in a planned move (east stays healthy).
// The forward is not abandoned: east answers, and west relays east's
// answer; east's upstream ran once and west's never. (Abandoning it on a
// planned move left calls with 504 forward-answer-lost under load.)
func TestAForwardToALiveOwnerIsNotAbandoned(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(t *testing.T, st *sqlstore.Store, east, west *regionGW)
	}{
		{"another shard moves", func(t *testing.T, _ *sqlstore.Store, _, west *regionGW) {
			west.owners.set(actorShard+1, "west", 7, gateway.ShardFailedOver)
			west.owners.set(actorShard, "east", 1, gateway.ShardActive) // re-announced as it was
		}},
		{"this shard moves away from its live owner", func(t *testing.T, st *sqlstore.Store, east, west *regionGW) {
			if err := st.MoveFence(context.Background(), fencing.Move{Shard: actorShard, From: 1, To: "west",
				Operator: "test", Reason: "planned move"}); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*regionGW{east, west} {
				r.owners.set(actorShard, "west", 2, gateway.ShardActive)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			st := openStore(t, 8)
			health := &turningHealth{states: map[string]failover.RegionState{}}
			east, west := startRegions(t, st, "east", regionsOptions{health: func(string) gateway.RegionHealth { return health },
				upstream: func(name string) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						once.Do(func() { close(entered) })
						<-release
						w.WriteHeader(http.StatusCreated)
					})
				}})
			done := send(t, post(t, west.url+"/v1/things", token(t, "alice"), "owner-slow", routeBody))
			<-entered
			tc.move(t, st, east, west)
			close(release)
			a := <-done
			if a.status == http.StatusGatewayTimeout || a.header.Get(gateway.HeaderRegion) != "east" {
				t.Errorf("got %s from region %q, want east's own answer relayed", describe(a.status, a.header, a.body), a.header.Get(gateway.HeaderRegion))
			}
			if east.upstream.Load() != 1 || west.upstream.Load() != 0 {
				t.Errorf("east's upstream ran %d times, west's %d; want 1 and 0", east.upstream.Load(), west.upstream.Load())
			}
		})
	}
}
