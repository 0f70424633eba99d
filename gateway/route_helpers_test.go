package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// staticOwners stands in for the ownership directory's watch-fed cache (not
// for a store): a fixed shard -> owner map that counts its lookups.
type staticOwners struct {
	mu      sync.Mutex
	shards  map[int]shardOwner
	calls   atomic.Int64
	changed chan struct{} // closed and replaced by every set, as ownership.Cache's
}

type shardOwner struct {
	region string
	epoch  int64
	state  string
}

var _ gateway.Owners = (*staticOwners)(nil)

func newOwners() *staticOwners {
	return &staticOwners{shards: map[int]shardOwner{}, changed: make(chan struct{})}
}

// Changed returns a channel closed at the next set, as
// ownership.Cache.Changed does at the next revision.
func (o *staticOwners) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Owner implements gateway.Owners.
func (o *staticOwners) Owner(shard int) (string, int64, string, bool) {
	o.calls.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.shards[shard]
	return s.region, s.epoch, s.state, ok
}

func (o *staticOwners) set(shard int, region string, epoch int64, state string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shards[shard] = shardOwner{region, epoch, state}
	close(o.changed)
	o.changed = make(chan struct{})
}

// regionGW is one region of a test deployment: its gateway, served over
// real HTTP in front of its own upstream, both counting what reaches them.
type regionGW struct {
	name      string
	url       string
	owners    *staticOwners
	received  atomic.Int64 // requests reaching the gateway
	upstream  atomic.Int64 // requests reaching the upstream
	forwarded atomic.Int64 // requests reaching the upstream with a hop header
	gw        *gateway.Gateway
}

// regionsOptions shapes a deployment of regions "east" and "west".
type regionsOptions struct {
	// routing is config.RoutingForward ("" too) or config.RoutingRedirect.
	routing string
	// urlOf, if set, returns the URL the gateway of region viewer lists
	// for region name, whose real URL is real (a proxy, a dead port).
	urlOf func(viewer, name, real string) string
	// owners, if set, wraps each region's directory cache (the region's
	// staticOwners) into what its gateway is given.
	owners func(name string, cache *staticOwners) gateway.Owners
	// meter and logger, if set, are given to both gateways.
	meter  metric.Meter
	logger *slog.Logger
	// endpoint, if set, is added to the endpoint's config (lines indented
	// by 4 spaces).
	endpoint string
	// health, if set, is the region liveness view of region name's gateway.
	health func(name string) gateway.RegionHealth
	// upstream, if set, serves region name's upstream after it counted
	// the request (default: a 201 echoing the body).
	upstream func(name string) http.Handler
	// recovery, if set, is both gateways' recovery configuration.
	recovery gateway.RecoveryConfig
	// clock, if set, is both gateways' clock (Config.Clock).
	clock clock.Clock
}

// actorShard is the shard of the test actor t/alice.
var actorShard = shard.Of("t/alice", shard.DefaultCount)

// startRegions starts gateways "east" and "west" on one shared store (the
// global SQL store), with the test actor's shard owned by owner at epoch 1
// in the store's fence and in both directory caches.
func startRegions(t testing.TB, s *sqlstore.Store, owner string, o regionsOptions) (east, west *regionGW) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), `UPDATE shard_fences SET epoch = 1, owner_region = $2 WHERE shard = $1`,
		actorShard, owner); err != nil {
		t.Fatal(err)
	}
	east, west = &regionGW{name: "east"}, &regionGW{name: "west"}
	servers := map[string]*httptest.Server{}
	for _, r := range []*regionGW{east, west} {
		srv := httptest.NewUnstartedServer(nil)
		r.url = "http://" + srv.Listener.Addr().String()
		servers[r.name] = srv
	}
	for _, r := range []*regionGW{east, west} {
		var regions []config.Region
		for _, peer := range []*regionGW{east, west} {
			u := peer.url
			if o.urlOf != nil {
				u = o.urlOf(r.name, peer.name, u)
			}
			regions = append(regions, config.Region{Name: peer.name, URL: u})
		}
		topo, err := region.New(r.name, regions)
		if err != nil {
			t.Fatal(err)
		}
		r.owners = newOwners()
		r.owners.set(actorShard, owner, 1, gateway.ShardActive)
		var owners gateway.Owners = r.owners
		if o.owners != nil {
			owners = o.owners(r.name, r.owners)
		}
		var health gateway.RegionHealth
		if o.health != nil {
			health = o.health(r.name)
		}
		var serve http.Handler
		if o.upstream != nil {
			serve = o.upstream(r.name)
		}
		g, err := gateway.New(gateway.Config{Region: r.name, Worker: r.name + "-w", Store: s, Auth: verifier(t),
			Endpoints: endpoints(t, benchEndpoint+o.endpoint), Next: gateway.NewProxy(r.startUpstream(t, serve), nil),
			Owners: owners, Topology: topo, Routing: o.routing, Meter: o.meter, Logger: o.logger, Health: health,
			Recovery: o.recovery, Clock: o.clock})
		if err != nil {
			t.Fatal(err)
		}
		startGateway(t, g)
		r.gw = g
		srv := servers[r.name]
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			r.received.Add(1)
			g.ServeHTTP(w, req)
		})
		t.Cleanup(func() { g.Close() }) // after the server closed
		srv.Start()
		t.Cleanup(srv.Close)
	}
	return east, west
}

// startUpstream serves the region's copy of the API: serve if set, else
// 201 with a body that depends only on the request, so two regions answer
// one request alike.
func (r *regionGW) startUpstream(t testing.TB, serve http.Handler) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.upstream.Add(1)
		if req.Header.Get(gateway.HeaderForwardedFrom) != "" {
			r.forwarded.Add(1)
		}
		if serve != nil {
			serve.ServeHTTP(w, req)
			return
		}
		body, _ := io.ReadAll(req.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/things/1")
		w.WriteHeader(http.StatusCreated)
		w.Write(append([]byte(`{"created":`), append(body, '}')...))
	}))
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
