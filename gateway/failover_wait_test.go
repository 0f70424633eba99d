package gateway_test

import (
	"net/http"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
)

// suspectRegions is a liveness view in which every region is suspect.
type suspectRegions struct{}

func (suspectRegions) State(string) failover.RegionState { return failover.Suspect }

// TestAWaitForAFailoverAsksTheClientBackWithinASecond: while the actor's
// owner region is suspect (its shards not moved yet), the gateway answers
// 503 region-failover with Retry-After 1, the least a Retry-After can
// say: the failover completes within about a second of that, and a client
// that honours a longer hint comes back late. Nothing runs.
func TestAWaitForAFailoverAsksTheClientBackWithinASecond(t *testing.T) {
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{health: func(string) gateway.RegionHealth { return suspectRegions{} }})
	st, h, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "owner-suspect", routeBody))
	if st != http.StatusServiceUnavailable || problemType(t, b) != "region-failover" || h.Get("Retry-After") != "1" {
		t.Errorf("got %s Retry-After=%q, want 503 region-failover with Retry-After 1", describe(st, h, b), h.Get("Retry-After"))
	}
	if west.upstream.Load()+east.received.Load() != 0 {
		t.Errorf("west's upstream ran %d, east received %d; want nothing run anywhere", west.upstream.Load(), east.received.Load())
	}
	assertNoRecord(t, s, "owner-suspect")
}
