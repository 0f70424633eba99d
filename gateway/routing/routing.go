// Package routing is the gateway's second stage: it decides which region
// serves a coordinated request and the fencing token this region claims
// its key with. In multi-region mode it reads the ownership directory's
// cache (no I/O) and forwards, redirects, holds (a shard between owners:
// a move, a pending failover) or refuses; single-region, it reads the
// store's shard fences. It drives the request's rounds (Rounds): each
// round routes, then runs the caller's step with the token.
//
// The stage holds only what it uses: the directory cache, the region
// health view, the topology, the forward client, the store's fence reads
// and its own metric and log. It answers the client through the shared
// exchange.Request and returns a Route or an End, never a control-flow
// error.
package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/region"
)

// HeaderRegion names the region that answered (set on every coordinated
// answer; a forward relays the owner's).
const HeaderRegion = "X-Idempotency-Region"

// Fences reads a shard's authoritative fence from the store.
type Fences interface {
	Fence(ctx context.Context, shard int) (epoch int64, owner string, err error)
}

// Config is what the routing stage is built from (the gateway's Config's
// routing part, its defaults filled in).
type Config struct {
	// Region is this gateway's region ("" in multi-region mode: the
	// topology's local region).
	Region string
	// Shards is the number of shards actors hash to.
	Shards int
	// Fences reads the store's shard fences (the gateway's decorated
	// store).
	Fences Fences
	// Owners, if set, is multi-region mode (see the gateway's Config).
	Owners Owners
	// Health, if set, is the region liveness view the failover policies
	// decide by.
	Health RegionHealth
	// Ledger, if set, records what routing holds or refuses.
	Ledger ledger.Recorder
	// Topology gives the regions' gateway URLs (required with Owners).
	Topology *region.Topology
	// Routing is config.RoutingForward or config.RoutingRedirect.
	Routing string
	// ForwardTransport carries forwarded requests (nil: a transport of
	// its own).
	ForwardTransport http.RoundTripper
	// ForwardTimeout bounds one forwarded request (0: the endpoint's
	// upstream timeout plus in_progress.wait plus forwardSlack).
	ForwardTimeout time.Duration
	// Meter records idemcoord.forwarded; Logger the stage's logs.
	Meter  metric.Meter
	Logger *slog.Logger
	// Clock times the move/failover hold.
	Clock clock.Clock
}

// Stage routes coordinated requests. Its multi-region half (owners set)
// exists only in multi-region mode.
type Stage struct {
	local  string
	shards int
	// fences is the store's fences as last read (single-region routing,
	// and the tokens recovery and the move sweep take over with).
	fences *fenceCache
	// The multi-region half: nil owners is single-region mode.
	owners   Owners
	topo     *region.Topology
	store    Fences
	health   RegionHealth // nil: every region counts as healthy
	redirect bool
	client   *http.Client
	timeout  time.Duration
	counter  metric.Int64Counter
	log      *slog.Logger
	// clock times the move/failover hold (settle.go).
	clock clock.Clock
	// ledger records what routing holds or refuses.
	ledger ledger.Recorder
}

// New returns the routing stage. Without Owners it is single-region.
func New(cfg Config) (*Stage, error) {
	s := &Stage{local: cfg.Region, shards: cfg.Shards, store: cfg.Fences, log: cfg.Logger, clock: clock.Or(cfg.Clock)}
	if cfg.Owners != nil {
		if cfg.Topology == nil {
			return nil, errors.New("gateway: Owners needs a Topology")
		}
		if cfg.Region == "" {
			s.local = cfg.Topology.Local()
		}
		if s.local != cfg.Topology.Local() {
			return nil, fmt.Errorf("gateway: Region %q is not the topology's local region %q", cfg.Region, cfg.Topology.Local())
		}
		switch cfg.Routing {
		case "", config.RoutingForward, config.RoutingRedirect:
		default:
			return nil, fmt.Errorf("gateway: Routing must be %q or %q, got %q", config.RoutingForward, config.RoutingRedirect, cfg.Routing)
		}
		counter, err := cfg.Meter.Int64Counter("idemcoord.forwarded",
			metric.WithDescription("Requests for an actor another region owns, by owner region (to) and result: answered, unreachable, answer_lost, rerouted_owner_down (a failed forward held until its owner went down, then routed again), rerouted_owner_moved (a forward its owner had not answered, abandoned when the shard moved, then routed again), redirected, loop_refused."))
		if err != nil {
			return nil, err
		}
		s.owners, s.topo, s.health, s.ledger = cfg.Owners, cfg.Topology, cfg.Health, cfg.Ledger
		s.redirect = cfg.Routing == config.RoutingRedirect
		s.client, s.timeout, s.counter = forwardClient(cfg.ForwardTransport), cfg.ForwardTimeout, counter
	}
	s.fences = newFenceCache(cfg.Fences, cfg.Shards, s.local)
	return s, nil
}

// Local is this gateway's region.
func (s *Stage) Local() string { return s.local }

// MultiRegion reports whether the stage routes by the ownership
// directory (Owners set).
func (s *Stage) MultiRegion() bool { return s.owners != nil }

// Changed returns a channel closed at the next change of the ownership
// directory's cache, or nil (never closed) when the Owners have no change
// signal (single-region mode, or Owners without one). Take it before
// reading the cache, so a change after the read is not missed.
func (s *Stage) Changed() <-chan struct{} { return s.changed() }

// Owner is the directory cache's view of shard (multi-region mode only):
// see Owners.
func (s *Stage) Owner(shard int) (region string, epoch int64, state string, ok bool) {
	return s.owners.Owner(shard)
}

// fenceCache keeps each shard's epoch as last read from the store. It is a
// hint: the store checks epoch and owner region in every write, and a
// StaleEpochError invalidates the entry so the next request reads the
// fence again. It never adopts an epoch that belongs to another region:
// doing so would let a region that lost the shard keep writing.
type fenceCache struct {
	store  Fences
	shards int
	region string
	mu     sync.Mutex
	epochs map[int]int64
}

func newFenceCache(s Fences, shards int, region string) *fenceCache {
	return &fenceCache{store: s, shards: shards, region: region, epochs: map[int]int64{}}
}

// forwardClient is the HTTP client of forwarded requests: its own
// transport (so a drill can cut one region off without touching the
// upstream's), never following redirects (the owner's answer is relayed as
// it is).
func forwardClient(rt http.RoundTripper) *http.Client {
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256
		rt = t
	}
	return &http.Client{Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
