package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

const routeBody = `{"amount":"12.50","currency":"EUR"}`

// problemType returns the last segment of a problem document's type.
func problemType(t testing.TB, body string) string {
	t.Helper()
	typ, _ := parseProblem(body)
	return typ
}

// parseProblem returns a problem document's type (last segment) and detail.
func parseProblem(body string) (typ, detail string) {
	var p struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return "not a problem document: " + body, ""
	}
	return p.Type[strings.LastIndex(p.Type, "/")+1:], p.Detail
}

// assertNoRecord fails unless the store holds nothing for alice's key.
func assertNoRecord(t testing.TB, s *sqlstore.Store, key string) {
	t.Helper()
	if rec, err := s.Read(context.Background(), reviewScope(t, "alice", key)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("key %q: store holds a record (state %s, err %v), want none: nothing may be claimed", key, rec.State, err)
	}
}

func TestRequestToNonOwnerRegionIsAnsweredByTheOwner(t *testing.T) {
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{})
	alice := token(t, "alice")
	const path = "/v1/things?source=test"

	dst, dh, db := do(t, post(t, east.url+path, alice, "direct", routeBody))
	fst, fh, fb := do(t, post(t, west.url+path, alice, "via-west", routeBody))
	if dst != http.StatusCreated {
		t.Fatalf("direct request to the owner: %s", describe(dst, dh, db))
	}
	if fst != dst || fb != db {
		t.Errorf("request landing in the non-owner region: got %d %s, want the direct answer %d %s", fst, fb, dst, db)
	}
	for name, h := range map[string]http.Header{"direct": dh, "via west": fh} {
		if got := h.Get(gateway.HeaderRegion); got != "east" {
			t.Errorf("%s: %s = %q, want the serving region east", name, gateway.HeaderRegion, got)
		}
	}
	if west.upstream.Load() != 0 || east.upstream.Load() != 2 {
		t.Errorf("upstream runs: west %d, east %d; want 0 and 2 (the owner runs both, the other region none)",
			west.upstream.Load(), east.upstream.Load())
	}
	if east.forwarded.Load() != 0 {
		t.Errorf("the hop header reached the owner's upstream %d times, want never", east.forwarded.Load())
	}

	// A retry of the forwarded key replays the owner's record, whichever
	// region it lands in.
	for _, via := range []*regionGW{west, east} {
		st, h, b := do(t, post(t, via.url+path, alice, "via-west", routeBody))
		if st != dst || b != db || h.Get(gateway.HeaderReplayed) != "true" ||
			h.Get(gateway.HeaderOperationID) != fh.Get(gateway.HeaderOperationID) || h.Get(gateway.HeaderRegion) != "east" {
			t.Errorf("retry via %s: %s region=%q op=%q; want a replay of op %q served by east",
				via.name, describe(st, h, b), h.Get(gateway.HeaderRegion), h.Get(gateway.HeaderOperationID), fh.Get(gateway.HeaderOperationID))
		}
	}
	if east.upstream.Load() != 2 {
		t.Errorf("upstream runs after the retries: %d, want still 2", east.upstream.Load())
	}
}

func TestForwardingLoopEndsWithAClearErrorAfterOneHop(t *testing.T) {
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{})
	// Stale views: each region thinks the other owns the shard.
	east.owners.set(actorShard, "west", 1, gateway.ShardActive)
	west.owners.set(actorShard, "east", 1, gateway.ShardActive)

	st, h, b := do(t, post(t, east.url+"/v1/things", token(t, "alice"), "loop", routeBody))
	if st != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || problemType(t, b) != "misrouted" {
		t.Fatalf("answer: %s Retry-After=%q; want 503 misrouted with Retry-After", describe(st, h, b), h.Get("Retry-After"))
	}
	_, detail := parseProblem(b)
	for _, want := range []string{`region "east" forwarded`, `region "west"'s view is that "east" owns it`} {
		if !strings.Contains(detail, want) {
			t.Errorf("problem detail %q does not name both views (%q)", detail, want)
		}
	}
	if east.received.Load() != 1 || west.received.Load() != 1 {
		t.Errorf("requests received: east %d, west %d; want one each (one hop, no cycle)", east.received.Load(), west.received.Load())
	}
	if east.upstream.Load()+west.upstream.Load() != 0 {
		t.Errorf("upstreams ran %d times, want 0", east.upstream.Load()+west.upstream.Load())
	}
	assertNoRecord(t, s, "loop")
}

func TestClientHopHeaderOnlyEverCausesARefusal(t *testing.T) {
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{})
	alice := token(t, "alice")

	// At the owner it changes nothing, and it never reaches the upstream.
	r := post(t, east.url+"/v1/things", alice, "at-owner", routeBody)
	r.Header.Set(gateway.HeaderForwardedFrom, "west")
	if st, h, b := do(t, r); st != http.StatusCreated {
		t.Errorf("at the owner: %s, want 201", describe(st, h, b))
	}
	if east.forwarded.Load() != 0 {
		t.Errorf("the client's hop header reached the upstream")
	}
	// At another region it stops the forward: refused, neither forwarded
	// nor run locally.
	r = post(t, west.url+"/v1/things", alice, "at-other", routeBody)
	r.Header.Set(gateway.HeaderForwardedFrom, "mallory")
	st, h, b := do(t, r)
	if st != http.StatusServiceUnavailable || problemType(t, b) != "misrouted" || !strings.Contains(b, "not a region of this topology") {
		t.Errorf("at another region: %s, want 503 misrouted naming no client-chosen region", describe(st, h, b))
	}
	if east.received.Load() != 1 || west.upstream.Load() != 0 {
		t.Errorf("east received %d (want 1: only the first request), west's upstream ran %d (want 0)",
			east.received.Load(), west.upstream.Load())
	}
	assertNoRecord(t, s, "at-other")
}

func TestRedirectModeAnswers307ToTheOwner(t *testing.T) {
	s := openStore(t, 8)
	east, west := startRegions(t, s, "east", regionsOptions{routing: config.RoutingRedirect})
	alice := token(t, "alice")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(post(t, west.url+"/v1/things?x=1", alice, "redirected", routeBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := east.url + "/v1/things?x=1"; resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != want {
		t.Errorf("got %d Location %q, want 307 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if east.received.Load() != 0 || west.upstream.Load() != 0 {
		t.Errorf("east received %d, west's upstream ran %d; a redirect sends and runs nothing", east.received.Load(), west.upstream.Load())
	}
	// A client that follows it (Go's does, body and key included) gets
	// the owner's answer.
	if st, h, b := do(t, post(t, west.url+"/v1/things?x=1", alice, "redirected", routeBody)); st != http.StatusCreated || h.Get(gateway.HeaderRegion) != "east" {
		t.Errorf("following the redirect: %s region %q, want 201 from east", describe(st, h, b), h.Get(gateway.HeaderRegion))
	}
}

func TestShardWithoutASettledOwnerIsNeverServed(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *sqlstore.Store, east *regionGW)
		want  string
	}{
		{"moving away", func(t *testing.T, s *sqlstore.Store, east *regionGW) {
			east.owners.set(actorShard, "west", 2, gateway.ShardFencing)
		}, "ownership-moving"},
		{"moving here", func(t *testing.T, s *sqlstore.Store, east *regionGW) {
			east.owners.set(actorShard, "east", 2, gateway.ShardFencing)
		}, "ownership-moving"},
		{"cache not loaded", func(t *testing.T, s *sqlstore.Store, east *regionGW) {
			east.owners.mu.Lock()
			delete(east.owners.shards, actorShard)
			east.owners.mu.Unlock()
		}, "ownership-unknown"},
		{"store fence ahead of the cache", func(t *testing.T, s *sqlstore.Store, east *regionGW) {
			// Moved away and back (epoch 3): the cache has seen neither
			// move, and the last one may still be FENCING.
			if _, err := s.Pool().Exec(context.Background(), `UPDATE shard_fences SET epoch = 3 WHERE shard = $1`, actorShard); err != nil {
				t.Fatal(err)
			}
		}, "ownership-moving"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, 8)
			east, west := startRegions(t, s, "east", regionsOptions{})
			tt.setup(t, s, east)
			st, h, b := do(t, post(t, east.url+"/v1/things", token(t, "alice"), "unsettled", routeBody))
			if st != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || problemType(t, b) != tt.want {
				t.Errorf("got %s Retry-After=%q, want 503 %s with Retry-After", describe(st, h, b), h.Get("Retry-After"), tt.want)
			}
			if east.upstream.Load()+west.upstream.Load()+west.received.Load() != 0 {
				t.Errorf("east upstream %d, west received %d, west upstream %d; want nothing sent anywhere",
					east.upstream.Load(), west.received.Load(), west.upstream.Load())
			}
			assertNoRecord(t, s, "unsettled")
		})
	}
}

func TestStaleViewIsCorrectedByTheStoreFence(t *testing.T) {
	s := openStore(t, 8)
	east, west := startRegions(t, s, "west", regionsOptions{})
	// The shard was moved to east and back to west (epoch 3); east's
	// cache still says east owns it at epoch 2.
	if _, err := s.Pool().Exec(context.Background(), `UPDATE shard_fences SET epoch = 3 WHERE shard = $1`, actorShard); err != nil {
		t.Fatal(err)
	}
	west.owners.set(actorShard, "west", 3, gateway.ShardActive)
	east.owners.set(actorShard, "east", 2, gateway.ShardActive)

	st, h, b := do(t, post(t, east.url+"/v1/things", token(t, "alice"), "stale-view", routeBody))
	if st != http.StatusCreated || h.Get(gateway.HeaderRegion) != "west" {
		t.Errorf("got %s region %q, want 201 served by west (the store's owner)", describe(st, h, b), h.Get(gateway.HeaderRegion))
	}
	if east.upstream.Load() != 0 || west.upstream.Load() != 1 {
		t.Errorf("upstream runs: east %d, west %d; want 0 and 1", east.upstream.Load(), west.upstream.Load())
	}
}
