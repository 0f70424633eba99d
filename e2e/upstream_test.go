package e2e

import (
	"net/http"
	"sync/atomic"
)

// upstreamCounter carries the gateways' upstream calls (Options.Transport)
// and counts them: the direct proof that a refused request never left the
// gateway, where the ledger only shows calls that got as far as a write.
type upstreamCounter struct {
	next  http.RoundTripper
	calls atomic.Int64
}

var _ http.RoundTripper = (*upstreamCounter)(nil)

// newUpstreamCounter mirrors the gateway's own default transport (256 idle
// connections per host).
func newUpstreamCounter() *upstreamCounter {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return &upstreamCounter{next: t}
}

// RoundTrip counts the call, then makes it.
func (u *upstreamCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	u.calls.Add(1)
	return u.next.RoundTrip(r)
}

// count is the number of upstream calls so far (executions, resolves and
// passthroughs).
func (u *upstreamCounter) count() int64 { return u.calls.Load() }
