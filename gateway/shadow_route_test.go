package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway"
)

// regionStates is a fixed region liveness view (what failover.Tracker
// keeps up to date from etcd), by region name; a region not named is
// healthy.
type regionStates map[string]failover.RegionState

func (r regionStates) State(region string) failover.RegionState {
	if st, ok := r[region]; ok {
		return st
	}
	return failover.Healthy
}

// shadowEndpoint puts the regions' endpoint in shadow mode.
const shadowEndpoint = "    mode: shadow\n"

func TestAShadowEndpointNeverTurnsAMoveOrAFailoverIntoAnOutage(t *testing.T) {
	tests := []struct {
		name   string
		health regionStates
		setup  func(east *regionGW)
	}{
		{"shard moving away", nil, func(east *regionGW) { east.owners.set(actorShard, "west", 2, gateway.ShardFencing) }},
		{"shard moving here", nil, func(east *regionGW) { east.owners.set(actorShard, "east", 2, gateway.ShardFencing) }},
		{"failed over under reject", nil, func(east *regionGW) { east.owners.set(actorShard, "east", 2, gateway.ShardFailedOver) }},
		{"owner suspect", regionStates{"west": failover.Suspect}, func(east *regionGW) {
			east.owners.set(actorShard, "west", 1, gateway.ShardActive)
		}},
		{"owner failed, not moved yet", regionStates{"west": failover.Failed}, func(east *regionGW) {
			east.owners.set(actorShard, "west", 1, gateway.ShardActive)
		}},
		{"owner not known yet", nil, func(east *regionGW) {
			east.owners.mu.Lock()
			delete(east.owners.shards, actorShard)
			east.owners.mu.Unlock()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, 8)
			east, west := startRegions(t, s, "east", regionsOptions{endpoint: shadowEndpoint,
				health: func(string) gateway.RegionHealth { return tt.health }})
			tt.setup(east)
			st, h, b := do(t, post(t, east.url+"/v1/things", token(t, "alice"), "shadow-moving", routeBody))
			if st != http.StatusCreated || b != `{"created":`+routeBody+`}` {
				t.Fatalf("got %s; want the upstream's own 201, as without the gateway", describe(st, h, b))
			}
			if east.upstream.Load() != 1 || west.received.Load() != 0 {
				t.Fatalf("east's upstream ran %d times, west received %d; want the request passed upstream once, here",
					east.upstream.Load(), west.received.Load())
			}
		})
	}
}

// hangUpOwner is a fake owner region's gateway that reads each request and
// drops the connection without an answer: a forward lost after it was
// written.
func hangUpOwner(t *testing.T) *httptest.Server {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(owner.Close)
	return owner
}

// ownerAt lists url as region east's in region west's topology.
func ownerAt(url string) func(viewer, name, real string) string {
	return func(viewer, name, real string) string {
		if viewer == "west" && name == "east" {
			return url
		}
		return real
	}
}

func TestAShadowEndpointsLostForwardStaysA504AndRunsNothingHere(t *testing.T) {
	s := openStore(t, 8)
	_, west := startRegions(t, s, "east", regionsOptions{endpoint: shadowEndpoint, urlOf: ownerAt(hangUpOwner(t).URL)})
	st, h, b := do(t, post(t, west.url+"/v1/things", token(t, "alice"), "shadow-lost", routeBody))
	if st != http.StatusGatewayTimeout || problemType(t, b) != "forward-answer-lost" {
		t.Fatalf("got %s; want 504 forward-answer-lost: the owner may have run it", describe(st, h, b))
	}
	if west.upstream.Load() != 0 {
		t.Fatalf("west passed it upstream %d times, want never (the owner may have run it)", west.upstream.Load())
	}
}

func TestAShadowEndpointStreamsTheOwnersAnswer(t *testing.T) {
	first := bytes.Repeat([]byte("a"), 64<<10)
	clientSawFirst := make(chan struct{})
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		w.Write(first)
		w.(http.Flusher).Flush()
		// The rest only once the client has the first bytes: a gateway
		// that holds the whole answer before relaying it never gets it.
		select {
		case <-clientSawFirst:
			io.WriteString(w, "end")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(owner.Close)
	s := openStore(t, 8)
	_, west := startRegions(t, s, "east", regionsOptions{endpoint: shadowEndpoint + "    upstream_timeout: 2s\n",
		urlOf: ownerAt(owner.URL)})
	resp, err := http.DefaultClient.Do(post(t, west.url+"/v1/things", token(t, "alice"), "shadow-stream", routeBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, got); err != nil || !bytes.Equal(got, first) || resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d, first %d bytes: %v; want them while the owner is still answering", resp.StatusCode, len(first), err)
	}
	close(clientSawFirst)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "end" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}
