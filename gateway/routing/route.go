package routing

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/shard"
)

// Destination is where routing sent a request.
type Destination int

// Destinations of a Route.
const (
	// Here: this region serves the request; it claims with Route.Token.
	Here Destination = iota
	// Answer: routing answered the client (forwarded, redirected, held
	// or refused the request).
	Answer
	// Elsewhere: the store's fence gives the actor's shard to another
	// region (single-region mode), Route.Why says which; nothing was
	// answered.
	Elsewhere
)

// Route is routing's decision for one round of a request.
type Route struct {
	To Destination
	// Token is the fencing token this region claims with (Here).
	Token fencing.Token
	// Why names the owner the fence found (Elsewhere).
	Why error
}

// route decides where req is served in multi-region mode. The directory
// cache decides the first round with no I/O. After the store refused its epoch, the store's
// fence (one read) is the authority: another region there means the cache
// is behind and the call goes to that region; this region at another epoch
// means a transfer the cache has not seen yet, possibly still FENCING, so
// nothing is served until the cache catches up.
func (rt *Stage) route(ctx context.Context, c *exchange.Request, stale error) (Route, error) {
	return rt.routeOnce(ctx, c, stale, true)
}

// routeOnce is route; mayHold lets a failed forward be held until its
// owner is down and the call routed again (ownerdown.go), which the
// second routing then may not do again.
func (rt *Stage) routeOnce(ctx context.Context, c *exchange.Request, stale error, mayHold bool) (Route, error) {
	shard := shard.Of(c.Actor, rt.shards)
	if stale != nil {
		epoch, owner, err := rt.store.Fence(ctx, shard)
		if err != nil {
			return Route{}, err
		}
		if owner == "" || owner == rt.local {
			rt.moving(c, shard, "this region's ownership view is behind the store's fence")
			return Route{To: Answer}, nil
		}
		rt.elsewhere(ctx, c, shard, owner, epoch, false)
		return Route{To: Answer}, nil
	}
	owner, epoch, state, ok := rt.settled(ctx, c, shard) // settle.go: held while between owners
	switch {
	case !ok || (state != ShardActive && state != ShardFencing && state != ShardFailedOver):
		rt.log.WarnContext(ctx, "shard owner unknown", "shard", shard, "state", state)
		c.RefuseWait("ownership_unknown", exchange.Problem{Type: "ownership-unknown", Title: "the actor's owner region is not known yet",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, exchange.OwnershipRetryAfter)
		return Route{To: Answer}, nil
	case state == ShardFencing:
		ledger.NoteRouting(rt.ledger, rt.local, c.Actor, c.Endpoint.Name, c.Key, shard, epoch, true, "ownership-moving")
		rt.moving(c, shard, fmt.Sprintf("shard %d is moving to region %q", shard, owner))
		return Route{To: Answer}, nil
	case rt.failoverHold(ctx, c, shard, epoch, owner, state):
		return Route{To: Answer}, nil
	case owner == rt.local:
		return Route{To: Here, Token: fencing.Token{Shard: shard, Epoch: epoch, Region: rt.local}}, nil
	}
	if rt.elsewhere(ctx, c, shard, owner, epoch, mayHold) {
		return rt.routeOnce(ctx, c, nil, false) // the owner went down while its forward was held
	}
	return Route{To: Answer}, nil
}

// moving answers 503: the shard is between owners.
func (rt *Stage) moving(c *exchange.Request, shard int, why string) {
	c.RefuseWait("ownership_moving", exchange.Problem{Type: "ownership-moving", Title: "the actor's ownership is moving between regions",
		Detail: why + "; nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, exchange.OwnershipRetryAfter)
}

// elsewhere sends the call to owner, the region this gateway believes owns
// the shard (at epoch): forwarded once, or redirected. A call that was
// already forwarded here is refused instead: the forwarder thought this
// region owned the shard and this region thinks otherwise, so one of the
// two views is stale, and a second hop could only start a cycle. It
// reports whether the call is to be routed again: a forward that failed
// on evidence that the owner is dead, held (mayHold) until the owner
// turned suspect (ownerdown.go), or one abandoned because the shard moved
// while the owner had not answered (ownermoved.go); nothing was answered
// then.
func (rt *Stage) elsewhere(ctx context.Context, c *exchange.Request, shard int, owner string, epoch int64, mayHold bool) (again bool) {
	if from := ForwardedFrom(c.R.Context()); from != "" {
		rt.refuseLoop(ctx, c, from, shard, owner, epoch)
		return false
	}
	target, err := rt.target(c, owner)
	if err != nil {
		rt.log.ErrorContext(ctx, "shard owned by a region outside the topology", "shard", shard, "owner", owner)
		c.RefuseWait("ownership_unknown", exchange.Problem{Type: "ownership-unknown", Title: "the actor's owner region is not in this gateway's topology",
			Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, exchange.OwnershipRetryAfter)
		return false
	}
	if rt.redirect {
		c.Shadow.MarkRelay() // the client follows it to the owner, which serves it
		rt.count(ctx, owner, "redirected")
		c.Outcomes.Count(ctx, c.Endpoint.Name, "redirected", c.Start)
		h := c.W.Header()
		h.Set("Location", target)
		h.Set("Cache-Control", "no-store")
		c.W.WriteHeader(http.StatusTemporaryRedirect)
		return false
	}
	f := rt.forward(ctx, c, shard, owner, epoch, target, mayHold)
	switch {
	case f == nil:
		return false
	case mayHold && f.moved:
		rt.reroutedOwnerMoved(ctx, c, owner, f.wrote) // ownermoved.go
		return true
	case mayHold && rt.holdForOwnerDown(ctx, c, f, shard, owner):
		return true
	case f.wrote:
		rt.lost(ctx, c, owner, f.err)
	default:
		rt.unreachable(ctx, c, owner, f.err)
	}
	return false
}

// target is the URL of c's request at owner's gateway.
func (rt *Stage) target(c *exchange.Request, owner string) (string, error) {
	base, err := rt.topo.URL(owner)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(base, "/") + c.R.URL.RequestURI(), nil
}

// refuseLoop answers 503 misrouted to a forwarded call this region would
// forward again. The hop header is the client's to set too, so its value
// is named only when it is a region of the topology.
func (rt *Stage) refuseLoop(ctx context.Context, c *exchange.Request, from string, shard int, owner string, epoch int64) {
	if !rt.topo.Has(from) {
		from = "(not a region of this topology)"
	}
	rt.count(ctx, owner, "loop_refused")
	rt.log.WarnContext(ctx, "forwarded request for a shard this region does not own", "shard", shard,
		"forwarded_from", from, "owner_here", owner, "epoch_here", epoch)
	c.RefuseWait("misrouted", exchange.Problem{Type: "misrouted", Title: "regions disagree on who owns the actor",
		Detail: fmt.Sprintf("region %s forwarded this request to region %q as the owner of shard %d; region %q's view is that %q owns it (epoch %d); a request is forwarded at most once, nothing was executed; retry with the same key",
			quoteRegion(from), rt.local, shard, rt.local, owner, epoch),
		Status: http.StatusServiceUnavailable}, exchange.OwnershipRetryAfter)
}

func quoteRegion(name string) string {
	if strings.HasPrefix(name, "(") {
		return name
	}
	return fmt.Sprintf("%q", name)
}
