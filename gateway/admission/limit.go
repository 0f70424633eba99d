package admission

import (
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// limitSweepAt is the bucket count above which idle buckets are dropped:
// a bucket that has refilled to its burst is the same as a new one, so
// dropping it changes no answer and keeps memory bounded by the actors
// active within one refill time.
const limitSweepAt = 4096

// limiter holds the per-actor, per-endpoint token buckets of the endpoints
// that configure a limit. It is local to one gateway instance.
type limiter struct {
	clock clock.Clock
	// rules are the parsed limits by endpoint name; an endpoint without
	// one is absent.
	rules   map[string]limitRule
	mu      sync.Mutex
	buckets map[limitKey]*rate.Limiter
	sweepAt int
}

type limitRule struct {
	every rate.Limit
	burst int
}

type limitKey struct{ endpoint, actor string }

// newLimiter builds the buckets' rules from validated endpoints.
func newLimiter(c clock.Clock, eps []config.Endpoint) *limiter {
	l := &limiter{clock: c, rules: map[string]limitRule{}, buckets: map[limitKey]*rate.Limiter{}, sweepAt: limitSweepAt}
	for _, ep := range eps {
		if !ep.Limit.Enabled() {
			continue
		}
		perSec, err := ep.Limit.PerSecond()
		if err != nil {
			continue // refused by config validation
		}
		l.rules[ep.Name] = limitRule{every: rate.Limit(perSec), burst: ep.Limit.BurstOrDefault()}
	}
	return l
}

// allow takes one token from the actor's bucket on the endpoint. When the
// bucket is empty it reports how long until a token is available.
func (l *limiter) allow(endpoint, actor string) (ok bool, retryAfter time.Duration) {
	rule, limited := l.rules[endpoint]
	if !limited {
		return true, 0
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := limitKey{endpoint, actor}
	b := l.buckets[k]
	if b == nil {
		if len(l.buckets) >= l.sweepAt {
			l.sweep(now)
		}
		b = rate.NewLimiter(rule.every, rule.burst)
		l.buckets[k] = b
	}
	if b.AllowN(now, 1) {
		return true, 0
	}
	r := b.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}

// sweep drops buckets that have refilled; called with mu held.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.rules[k.endpoint].burst) {
			delete(l.buckets, k)
		}
	}
	l.sweepAt = max(limitSweepAt, 2*len(l.buckets))
}

// Limited charges a replay or an in-progress answer to the actor's limit
// for the endpoint, once per request however many rounds it takes (a
// wait, then the replay): c.Charged is set once it took its token. It
// reports whether the limit refused it, having answered 429.
func (a *Stage) Limited(c *exchange.Request) bool {
	if c.Charged {
		return false
	}
	ok, wait := a.limits.allow(c.Endpoint.Name, c.Actor)
	if ok {
		c.Charged = true
		return false
	}
	exchange.SetKeyStatus(c.W, exchange.KeyStatusRejected)
	c.RefuseWait("rate_limited", exchange.Problem{Type: "rate-limited", Title: "too many replays for this actor",
		Detail: "replays and in-progress answers count against a per-actor limit; retry with the same key later",
		Status: http.StatusTooManyRequests}, wait)
	return true
}
