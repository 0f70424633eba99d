package gateway

import (
	"context"
	"errors"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/retry"
)

// errRoundsOut means a call's rounds ended without an answer: the record
// kept changing under it, or the store budget the rounds share was spent.
var errRoundsOut = errors.New("gateway: rounds ran out")

// fenceRefused ends rounds whose last round the fence refused: the
// fence kept refusing this region. It unwraps to the refusal.
type fenceRefused struct{ err error }

func (e fenceRefused) Error() string { return e.err.Error() }
func (e fenceRefused) Unwrap() error { return e.err }

// round is one round's view of the call's shared store budget.
type round struct {
	// Token is the fencing token the round writes with.
	Token fencing.Token
	share *retry.Share
}

// store derives the context of one store call of the round: its deadline is
// what the rounds' shared budget has left (at most storeCallTimeout), and
// the store's own retries draw from the same budget.
func (r round) store(ctx context.Context) (context.Context, func()) {
	return r.share.Call(ctx, storeCallTimeout)
}

// stepResult is how a round ended.
type stepResult struct {
	// again asks for another round.
	again bool
	// stale, with again, is the fence's refusal of the round's token: the
	// next round re-reads the fence before it writes (see claimToken).
	stale error
}

var (
	answered = stepResult{}            // the step answered the client
	another  = stepResult{again: true} // the record moved on: decide again
	stale    = func(err error) stepResult { return stepResult{again: true, stale: err} }
)

// rounds is the one round driver of the request path (claim, decide, run)
// and of the cancel path. Each round routes the call and takes the actor's
// fencing token (claimToken, which may forward, redirect or refuse instead),
// then runs step with it. step answers, or asks for another round: the
// record moved on under it, or the fence refused its token.
//
// Every round's store calls share share (retry.Default.Store unless the
// caller started it with calls of its own): attempts and store time. So the
// rounds never multiply the store's budget; they end after maxRounds, or
// when the budget is spent.
//
// rounds returns nil once a step answered, errRouted when routing answered,
// the error of claimToken (errNotOwner, or the store's), fenceRefused
// wrapping the fence's last refusal when the rounds ended on one, or
// errRoundsOut.
func (g *Gateway) rounds(ctx context.Context, c *call, share *retry.Share, maxRounds int,
	step func(r round) stepResult) error {
	var staleErr error
	for n := 0; n < maxRounds && (n == 0 || !share.Spent()); n++ {
		r := round{share: share}
		tok, err := g.claimToken(ctx, r, c, staleErr)
		if err != nil {
			return err
		}
		r.Token = tok
		res := step(r)
		if !res.again {
			return nil
		}
		if staleErr = res.stale; staleErr != nil {
			g.fences.invalidate(tok.Shard)
		}
	}
	if staleErr != nil {
		return fenceRefused{staleErr}
	}
	return errRoundsOut
}
