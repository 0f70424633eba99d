package client

import "sync"

// Retry budget for switching regions at once, after gRPC's retry
// throttling: a bucket of budgetMax tokens, full at the start. Every
// immediate switch to another region takes one token, and only while at
// least half the bucket would be left; every answer a region gives that
// is not a refusal (a 503 naming no operation) puts a tenth of a token
// back. So in steady state
// at most about one attempt in ten may be an immediate switch, plus a
// burst of budgetMax/2 when a region goes away: a dead or refusing region
// cannot multiply the load on the live ones. Once the budget is spent the
// client still moves to the next region, but after the usual backoff.
//
// Tokens are counted in tenths so that ten answers make exactly one.
const (
	budgetMax    = 10 * budgetTenths
	budgetTenths = 10
)

// budget is the client-wide token bucket of immediate region switches.
type budget struct {
	mu     sync.Mutex
	tenths int
}

func newBudget() *budget { return &budget{tenths: budgetMax} }

// take spends one token for an immediate switch, if half the bucket is
// left after it.
func (b *budget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tenths-budgetTenths < budgetMax/2 {
		return false
	}
	b.tenths -= budgetTenths
	return true
}

// refill puts a tenth of a token back for an answer, up to budgetMax.
func (b *budget) refill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tenths = min(b.tenths+1, budgetMax)
}
