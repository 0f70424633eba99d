package routing

import (
	"context"
	"fmt"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/internal/retry"
)

// Round is one round's view of the request's shared store budget.
type Round struct {
	// Token is the fencing token the round writes with.
	Token fencing.Token
	share *retry.Share
}

// Store derives the context of one store call of the round: its deadline
// is what the rounds' shared budget has left (at most the store's call
// bound), and the store's own retries draw from the same budget.
func (r Round) Store(ctx context.Context) (context.Context, func()) {
	return r.share.Call(ctx, exchange.StoreCallTimeout)
}

// Step is how a round's step ended.
type Step struct {
	// again asks for another round.
	again bool
	// stale, with again, is the fence's refusal of the round's token: the
	// next round re-reads the fence before it writes (see Route).
	stale error
}

var (
	// Done: the step answered the client.
	Done = Step{}
	// Again: the record moved on; decide again in another round.
	Again = Step{again: true}
)

// Stale asks for another round after the fence refused the round's token
// (err): the next round re-reads the fence before it writes.
func Stale(err error) Step { return Step{again: true, stale: err} }

// Ending is how a request's rounds ended.
type Ending int

// Endings of Rounds.
const (
	// Answered: a step answered the client.
	Answered Ending = iota
	// Routed: routing answered the client (forwarded, redirected, held or
	// refused it).
	Routed
	// NotOwner: the store's fence gives the actor's shard to another
	// region (single-region mode); End.Err says which. Nothing answered.
	NotOwner
	// FenceRefused: the fence kept refusing this region's token; End.Err
	// is its last refusal. Nothing answered.
	FenceRefused
	// RoundsOut: the record kept changing under the rounds, or their store
	// budget was spent. Nothing answered.
	RoundsOut
	// StoreDown: routing could not read the store; End.Err is its error.
	// Nothing answered.
	StoreDown
)

// End is how a request's rounds ended, and why (Err, for the endings that
// have one, to log).
type End struct {
	Ending Ending
	Err    error
}

// Rounds is the one round driver of the request path (claim, decide, run)
// and of the cancel path. Each round routes the request (Route, which may
// forward, redirect or refuse instead), then runs step with the round's
// token. step answers, or asks for another round: the record moved on
// under it, or the fence refused its token.
//
// Every round's store calls share share (retry.Default.Store unless the
// caller started it with calls of its own): attempts and store time. So
// the rounds never multiply the store's budget; they end after maxRounds,
// or when the budget is spent.
func (s *Stage) Rounds(ctx context.Context, req *exchange.Request, share *retry.Share, maxRounds int,
	step func(r Round) Step) End {
	var staleErr error
	for n := 0; n < maxRounds && (n == 0 || !share.Spent()); n++ {
		r := Round{share: share}
		rt, err := s.Route(ctx, r, req, staleErr)
		switch {
		case err != nil:
			return End{Ending: StoreDown, Err: err}
		case rt.To == Answer:
			return End{Ending: Routed}
		case rt.To == Elsewhere:
			return End{Ending: NotOwner, Err: rt.Why}
		}
		r.Token = rt.Token
		res := step(r)
		if !res.again {
			return End{Ending: Answered}
		}
		if staleErr = res.stale; staleErr != nil {
			s.fences.invalidate(rt.Token.Shard)
		}
	}
	if staleErr != nil {
		return End{Ending: FenceRefused, Err: staleErr}
	}
	return End{Ending: RoundsOut}
}

// Route returns where req is served in round r. stale is the store's
// refusal of the previous round's token, nil on the first. Single-region
// mode keeps the fence cache read from the store. What reads the store,
// or waits, does so within the round's store budget (r); a token the
// fence cache holds costs no store call, so no call's context either.
// err is the store's, when the fence could not be read.
func (s *Stage) Route(ctx context.Context, r Round, req *exchange.Request, stale error) (Route, error) {
	// Whatever follows is this region's answer, unless a forward relays
	// the owner's (which names its own region).
	req.W.Header().Set(HeaderRegion, s.local)
	if s.owners == nil {
		if tok, ok := s.fences.cached(req.Actor); ok {
			return Route{To: Here, Token: tok}, nil
		}
	}
	sctx, done := r.Store(ctx)
	defer done()
	if s.owners == nil {
		tok, owned, owner, err := s.fences.token(sctx, req.Actor)
		switch {
		case err != nil:
			return Route{}, err
		case !owned:
			return Route{To: Elsewhere, Why: fmt.Errorf("gateway: shard owned by another region: shard %d is owned by %q at epoch %d",
				tok.Shard, owner, tok.Epoch)}, nil
		}
		return Route{To: Here, Token: tok}, nil
	}
	return s.route(sctx, req, stale)
}
