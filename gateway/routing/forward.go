package routing

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// forwardSlack is added to the endpoint's upstream timeout to bound a
// forwarded request by default: it covers the owner's own claim and finish
// (a few milliseconds each, unless its store is in trouble). Erring short
// is safe: a forward that times out is a 504, and the client's retry with
// the same key replays the owner's record or finds it in progress.
const forwardSlack = 5 * time.Second

// forwardFailure is how a forward ended without an answer to relay.
type forwardFailure struct {
	// wrote: the request's head was written, so the owner may have acted
	// on it (an answer lost); else it never reached the owner.
	wrote bool
	// down: the failure is evidence that nothing serves at the owner's
	// address (failover.NothingServes: refused, or closed or reset before
	// any answer), not a timeout.
	down bool
	// moved: the shard's owner changed while the forward waited for its
	// answer, and the forward was abandoned for it (ownermoved.go).
	moved bool
	err   error
}

// forward sends the call once to the owner region's gateway at target and
// relays its answer, or returns how it failed without answering the
// client (elsewhere answers, or holds the call: ownerdown.go).
// Method, path, query, body, Authorization and
// Idempotency-Key go unchanged; HeaderForwardedFrom names this region so
// the owner never forwards it again. The owner authenticates, claims and
// answers as for a direct request, so the client sees the same answer.
//
// The request is sent at most once. Go's transport resends a request that
// failed on a reused connection when it deems it replayable, and a request
// with an Idempotency-Key and a rewindable body is, to it: the body here
// cannot be rewound (no GetBody), so a resend cannot happen. Nothing is
// ever executed locally instead while the owner holds the shard: an owner
// that cannot be reached is a 503, one whose answer was lost after the
// request may have reached it a 504.
//
// With mayAbandon, a forward still waiting for its answer when its owner
// has failed and the directory has handed the shard to another region is
// abandoned (ownermoved.go): the owner is paused or cut off, and the
// caller routes the call again.
func (rt *Stage) forward(ctx context.Context, c *exchange.Request, shard int, owner string, epoch int64, target string, mayAbandon bool) *forwardFailure {
	timeout := rt.timeout
	if timeout <= 0 {
		// The owner may hold a retry for in_progress.wait before it
		// answers (and then run it, after a retryable failure).
		timeout = c.Endpoint.UpstreamTimeout + c.Endpoint.InProgress.Wait + forwardSlack
	}
	ctx, cancel := context.WithTimeout(exchange.Detach(ctx), timeout)
	defer cancel()
	ctx, abandon := context.WithCancel(ctx)
	defer abandon()
	req, err := http.NewRequestWithContext(ctx, c.R.Method, target, nil)
	if err != nil {
		return &forwardFailure{err: err}
	}
	// Not a *bytes.Reader: NewRequest would add a GetBody, or turn an
	// empty body into NoBody, and either makes the request replayable.
	req.Body = io.NopCloser(bytes.NewReader(c.Body))
	req.ContentLength = int64(len(c.Body))
	req.Header = exchange.OutboundHeader(c.R.Header, 1)
	req.Header.Del("Expect")
	req.Header.Set(HeaderForwardedFrom, rt.local)
	// As for the upstream (Proxy.do): once the head is written the owner
	// may act on the request; before that it cannot have.
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	w := &ownerWatch{}
	if mayAbandon {
		w = rt.watchOwner(ctx, abandon, shard, owner, epoch, func() bool { return c.Shadow == nil || !wrote.Load() })
	}
	resp, err := rt.client.Do(req)
	cut := !w.answered()
	switch {
	case err != nil && cut:
		return &forwardFailure{wrote: wrote.Load(), moved: true, err: errOwnerMoved}
	case err != nil:
		return &forwardFailure{wrote: wrote.Load(), down: failover.NothingServes(ctx, err), err: err}
	}
	// An answer whose head came as the watch cut the forward is relayed
	// still; if the cut breaks its body, the client sees a broken answer
	// (below) and retries with its key.
	defer resp.Body.Close()
	rt.count(ctx, owner, "answered")
	c.Outcomes.Count(ctx, c.Endpoint.Name, "forwarded", c.Start)
	// Streamed to the client as it comes, on a shadow endpoint too.
	out := c.Shadow.Direct(c.W)
	h := out.Header()
	h.Del(HeaderRegion) // the owner's answer names the region that served it
	if c.Shadow == nil && resp.Header.Get(exchange.HeaderKeyStatus) != "" {
		exchange.SetKeyStatus(out, "") // the owner's word on the key
	}
	for name, vs := range resp.Header {
		h[name] = vs
	}
	exchange.DropHopHeaders(h)
	if c.Shadow != nil {
		h.Del(exchange.HeaderKeyExpires) // a shadow endpoint honours no key
	}
	out.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(out, resp.Body); err != nil {
		// The status is out; cut the connection so the client sees a
		// broken answer rather than a short one it could take as whole.
		rt.log.WarnContext(ctx, "forwarded answer cut short", "to", owner, "endpoint", c.Endpoint.Name, "err", exchange.Redact(err))
		panic(http.ErrAbortHandler)
	}
	return nil
}

// unreachable answers 503: the request never reached the owner region.
func (rt *Stage) unreachable(ctx context.Context, c *exchange.Request, owner string, err error) {
	rt.count(ctx, owner, "unreachable")
	rt.log.WarnContext(ctx, "owner region unreachable", "to", owner, "endpoint", c.Endpoint.Name, "err", exchange.Redact(err))
	c.RefuseWait("region_unreachable", exchange.Problem{Type: "region-unreachable", Title: "the actor's owner region is unreachable",
		Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, exchange.OwnershipRetryAfter)
}

// lost answers 504: the request may have reached the owner, which then
// holds the operation's record; a retry with the same key replays it or
// finds it in progress.
func (rt *Stage) lost(ctx context.Context, c *exchange.Request, owner string, err error) {
	rt.count(ctx, owner, "answer_lost")
	// Passing it upstream here could run it a second time: a shadow
	// client gets the 504 too.
	c.Shadow.MarkRelay()
	exchange.SetKeyStatus(c.W, exchange.KeyStatusInProgress) // not "rejected": the owner may have run it
	rt.log.WarnContext(ctx, "owner region's answer lost", "to", owner, "endpoint", c.Endpoint.Name, "key", c.Key, "err", exchange.Redact(err))
	c.RefuseWait("forward_answer_lost", exchange.Problem{Type: "forward-answer-lost", Title: "the owner region's answer was lost",
		Detail: "the owner region may have run the request; retry with the same key to get its answer",
		Status: http.StatusGatewayTimeout}, exchange.OwnershipRetryAfter)
}

// count counts one routed request by owner region and result.
func (rt *Stage) count(ctx context.Context, to, result string) {
	rt.counter.Add(ctx, 1, metric.WithAttributes(attribute.String("to", to), attribute.String("result", result)))
}
