package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// ownershipRetryAfter is the Retry-After of a 503 caused by ownership (a
// transfer in progress, a cache not loaded yet, two regions' views
// disagreeing, an owner region unreachable): a transfer completes and a
// watch catches up within about a second, so a client retrying after one
// second usually lands in a settled view.
const ownershipRetryAfter = time.Second

// errRouted means routing answered the request (forwarded, redirected or
// refused it): coordinate has nothing left to do.
var errRouted = errors.New("gateway: request answered by routing")

// routing sends coordinated requests to the region that owns their actor.
// It exists only in multi-region mode (Config.Owners set). It is
// self-contained: it holds what it reads (the directory cache, the
// store's fence, region health) and what it writes to (the answer, its
// metrics and log), and decides and answers a call's routing without
// going back to the Gateway.
type routing struct {
	local    string
	topo     *region.Topology
	owners   Owners
	shards   int
	fences   fenceReader
	health   RegionHealth // nil: every region counts as healthy
	redirect bool
	client   *http.Client
	timeout  time.Duration
	counter  metric.Int64Counter
	metrics  *metrics
	log      *slog.Logger
	// clock times the move/failover hold (settle.go).
	clock clock.Clock
	// ledger records what routing holds or refuses (Config.Ledger).
	ledger ledger.Recorder
}

// fenceReader reads a shard's authoritative fence (*sqlstore.Store).
type fenceReader interface {
	Fence(ctx context.Context, shard int) (epoch int64, owner string, err error)
}

// newRouting returns nil in single-region mode (no Owners). cfg has its
// defaults filled in (Shards, Logger).
func newRouting(cfg *Config, st store.Store, m *metrics) (*routing, error) {
	if cfg.Owners == nil {
		return nil, nil
	}
	if cfg.Topology == nil {
		return nil, errors.New("gateway: Owners needs a Topology")
	}
	if cfg.Region == "" {
		cfg.Region = cfg.Topology.Local()
	}
	if cfg.Region != cfg.Topology.Local() {
		return nil, fmt.Errorf("gateway: Region %q is not the topology's local region %q", cfg.Region, cfg.Topology.Local())
	}
	switch cfg.Routing {
	case "", config.RoutingForward, config.RoutingRedirect:
	default:
		return nil, fmt.Errorf("gateway: Routing must be %q or %q, got %q", config.RoutingForward, config.RoutingRedirect, cfg.Routing)
	}
	counter, err := cfg.Meter.Int64Counter("idemcoord.forwarded",
		metric.WithDescription("Requests for an actor another region owns, by owner region (to) and result: answered, unreachable, answer_lost, redirected, loop_refused."))
	if err != nil {
		return nil, err
	}
	return &routing{local: cfg.Region, topo: cfg.Topology, owners: cfg.Owners, shards: cfg.Shards, fences: st,
		health: cfg.Health, redirect: cfg.Routing == config.RoutingRedirect, client: forwardClient(cfg.ForwardTransport),
		timeout: cfg.ForwardTimeout, counter: counter, metrics: m, log: cfg.Logger, clock: clock.Or(cfg.Clock), ledger: cfg.Ledger}, nil
}

// claimToken returns the fencing token under which this region claims the
// call's key, or errRouted once routing has answered the request. stale is
// the store's refusal of the previous round's token, nil on the first.
// Single-region mode keeps the fence cache read from the store. What
// reads the store, or waits, does so within the round's store budget (r);
// a token the fence cache holds costs no store call, so no call's context
// either.
func (g *Gateway) claimToken(ctx context.Context, r round, c *call, stale error) (fencing.Token, error) {
	// Whatever follows is this region's answer, unless a forward relays
	// the owner's (which names its own region).
	c.W.Header().Set(HeaderRegion, g.cfg.Region)
	if g.routes == nil {
		if tok, ok := g.fences.cached(c.Actor); ok {
			return tok, nil
		}
	}
	sctx, done := r.store(ctx)
	defer done()
	if g.routes == nil {
		return g.fences.token(sctx, c.Actor)
	}
	return g.routes.token(sctx, c, stale)
}

// token decides where the call is served. The directory cache decides the
// first round with no I/O. After the store refused its epoch, the store's
// fence (one read) is the authority: another region there means the cache
// is behind and the call goes to that region; this region at another epoch
// means a transfer the cache has not seen yet, possibly still FENCING, so
// nothing is served until the cache catches up.
func (rt *routing) token(ctx context.Context, c *call, stale error) (fencing.Token, error) {
	shard := shard.Of(c.Actor, rt.shards)
	if stale != nil {
		epoch, owner, err := rt.fences.Fence(ctx, shard)
		if err != nil {
			return fencing.Token{}, err
		}
		if owner == "" || owner == rt.local {
			rt.moving(c, shard, "this region's ownership view is behind the store's fence")
			return fencing.Token{}, errRouted
		}
		rt.elsewhere(ctx, c, shard, owner, epoch)
		return fencing.Token{}, errRouted
	}
	owner, epoch, state, ok := rt.settled(ctx, c, shard) // settle.go: held while between owners
	switch {
	case !ok || (state != ShardActive && state != ShardFencing && state != ShardFailedOver):
		rt.log.WarnContext(ctx, "shard owner unknown", "shard", shard, "state", state)
		c.RefuseWait("ownership_unknown", exchange.Problem{Type: "ownership-unknown", Title: "the actor's owner region is not known yet",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, ownershipRetryAfter)
		return fencing.Token{}, errRouted
	case state == ShardFencing:
		ledger.NoteRouting(rt.ledger, rt.local, c.Actor, c.Endpoint.Name, c.Key, shard, epoch, true, "ownership-moving")
		rt.moving(c, shard, fmt.Sprintf("shard %d is moving to region %q", shard, owner))
		return fencing.Token{}, errRouted
	case rt.failoverHold(ctx, c, shard, epoch, owner, state):
		return fencing.Token{}, errRouted
	case owner == rt.local:
		return fencing.Token{Shard: shard, Epoch: epoch, Region: rt.local}, nil
	}
	rt.elsewhere(ctx, c, shard, owner, epoch)
	return fencing.Token{}, errRouted
}

// moving answers 503: the shard is between owners.
func (rt *routing) moving(c *call, shard int, why string) {
	c.RefuseWait("ownership_moving", exchange.Problem{Type: "ownership-moving", Title: "the actor's ownership is moving between regions",
		Detail: why + "; nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, ownershipRetryAfter)
}

// elsewhere sends the call to owner, the region this gateway believes owns
// the shard (at epoch): forwarded once, or redirected. A call that was
// already forwarded here is refused instead: the forwarder thought this
// region owned the shard and this region thinks otherwise, so one of the
// two views is stale, and a second hop could only start a cycle.
func (rt *routing) elsewhere(ctx context.Context, c *call, shard int, owner string, epoch int64) {
	if from := forwardedFrom(c.R.Context()); from != "" {
		rt.refuseLoop(ctx, c, from, shard, owner, epoch)
		return
	}
	base, err := rt.topo.URL(owner)
	if err != nil {
		rt.log.ErrorContext(ctx, "shard owned by a region outside the topology", "shard", shard, "owner", owner)
		c.RefuseWait("ownership_unknown", exchange.Problem{Type: "ownership-unknown", Title: "the actor's owner region is not in this gateway's topology",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, ownershipRetryAfter)
		return
	}
	target := strings.TrimSuffix(base, "/") + c.R.URL.RequestURI()
	if rt.redirect {
		c.shadow.markRelay() // the client follows it to the owner, which serves it
		rt.count(ctx, owner, "redirected")
		rt.metrics.request(ctx, c.Endpoint.Name, "redirected", c.Start)
		h := c.W.Header()
		h.Set("Location", target)
		h.Set("Cache-Control", "no-store")
		c.W.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	rt.forward(ctx, c, owner, target)
}

// refuseLoop answers 503 misrouted to a forwarded call this region would
// forward again. The hop header is the client's to set too, so its value
// is named only when it is a region of the topology.
func (rt *routing) refuseLoop(ctx context.Context, c *call, from string, shard int, owner string, epoch int64) {
	if !rt.topo.Has(from) {
		from = "(not a region of this topology)"
	}
	rt.count(ctx, owner, "loop_refused")
	rt.log.WarnContext(ctx, "forwarded request for a shard this region does not own", "shard", shard,
		"forwarded_from", from, "owner_here", owner, "epoch_here", epoch)
	c.RefuseWait("misrouted", exchange.Problem{Type: "misrouted", Title: "regions disagree on who owns the actor",
		Detail: fmt.Sprintf("region %s forwarded this request to region %q as the owner of shard %d; region %q's view is that %q owns it (epoch %d); a request is forwarded at most once, nothing was executed; retry with the same key",
			quoteRegion(from), rt.local, shard, rt.local, owner, epoch),
		Status: http.StatusServiceUnavailable}, ownershipRetryAfter)
}

func quoteRegion(name string) string {
	if strings.HasPrefix(name, "(") {
		return name
	}
	return fmt.Sprintf("%q", name)
}

// count counts one routed request by owner region and result.
func (rt *routing) count(ctx context.Context, to, result string) {
	rt.counter.Add(ctx, 1, metric.WithAttributes(attribute.String("to", to), attribute.String("result", result)))
}
