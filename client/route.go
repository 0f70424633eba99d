package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// headerRegion names the region that served an answer: the owner of the
// actor when the answer is an operation's (a forwarding region relays the
// owner's answer, header and all).
const headerRegion = "X-Idempotency-Region"

// region is one configured region and what the client learned of it.
type region struct {
	name    string // "" when the configuration gave none
	base    string // URL without a trailing slash
	readyz  string // the gateway's /readyz, at the root of base's host
	healthz string // the gateway's /healthz, likewise (the stall probe)
	shown   string // base with any password hidden, for logs
	br      breaker
}

func newRegion(name, base string) *region {
	base = strings.TrimSuffix(base, "/")
	r := &region{name: name, base: base, readyz: base + "/readyz", healthz: base + "/healthz", shown: base}
	if u, err := url.Parse(base); err == nil {
		r.shown = u.Redacted()
		u.Path, u.RawPath = "/readyz", ""
		r.readyz = u.String()
		u.Path = "/healthz"
		r.healthz = u.String()
	}
	return r
}

// regions is the client's view of the deployment: the configured regions
// in order, which one last answered as the owner, and the switch budget.
type regions struct {
	list    []*region
	owner   atomic.Int32 // index of the last answer's owner region; -1 none
	budget  *budget
	probes  sync.WaitGroup // running /readyz probes (tests wait on it)
	probeFn func(r *region)
}

func newRegions(cfg Config) *regions {
	rs := &regions{budget: newBudget()}
	rs.owner.Store(-1)
	if cfg.BaseURL != "" {
		rs.list = []*region{newRegion("", cfg.BaseURL)}
	}
	for _, r := range cfg.Regions {
		rs.list = append(rs.list, newRegion(r.Name, r.URL))
	}
	return rs
}

// learn records the owner an answer named: an answer that carries an
// operation id comes from the region holding the operation, which is the
// owner of the caller's actor. Refusals (503s, which name no operation)
// name the region that refused, and are not learned from.
func (rs *regions) learn(resp *Response) {
	if resp.OperationID == "" || resp.Status == http.StatusServiceUnavailable {
		return
	}
	name := resp.Header.Get(headerRegion)
	if name == "" {
		return
	}
	for i, r := range rs.list {
		if r.name == name {
			rs.owner.Store(int32(i))
			return
		}
	}
}

// usable reports whether region i may take an intent now, starting its
// probe when its breaker's wait is over.
func (rs *regions) usable(i int, now time.Time) bool {
	ok, probe := rs.list[i].br.usable(now)
	if probe {
		rs.probes.Add(1)
		go func() {
			defer rs.probes.Done()
			rs.probeFn(rs.list[i])
		}()
	}
	return ok
}

// first picks the region of an intent's first attempt: the last answer's
// owner when it is usable, else the first usable region in list order,
// else (every region is open) the one whose wait ends first.
func (rs *regions) first(now time.Time) int {
	if o := int(rs.owner.Load()); o >= 0 && rs.usable(o, now) {
		return o
	}
	for i := range rs.list {
		if rs.usable(i, now) {
			return i
		}
	}
	return rs.soonest()
}

// next returns the first usable region after from in ring order for which
// skip is false, or -1.
func (rs *regions) next(from int, now time.Time, skip func(int) bool) int {
	for step := 1; step < len(rs.list); step++ {
		i := (from + step) % len(rs.list)
		if !skip(i) && rs.usable(i, now) {
			return i
		}
	}
	return -1
}

// soonest returns the region whose breaker's wait ends first.
func (rs *regions) soonest() int {
	best := 0
	for i, r := range rs.list {
		if r.br.until().Before(rs.list[best].br.until()) {
			best = i
		}
	}
	return best
}

// route is one intent's path through the regions: where its current
// attempt goes and which regions it tried since its last wait.
type route struct {
	rs    *regions
	cur   int
	tried []bool
}

func (rs *regions) route(now time.Time) *route {
	rt := &route{rs: rs, cur: rs.first(now), tried: make([]bool, len(rs.list))}
	rt.tried[rt.cur] = true
	return rt
}

// region returns the current attempt's region.
func (rt *route) region() *region { return rt.rs.list[rt.cur] }

// switchNow moves to a usable region not tried since the last wait, for a
// retry at once; false when there is none or the budget is spent.
func (rt *route) switchNow(now time.Time) bool {
	i := rt.rs.next(rt.cur, now, func(i int) bool { return rt.tried[i] })
	if i < 0 || !rt.rs.budget.take() {
		return false
	}
	rt.cur, rt.tried[i] = i, true
	return true
}

// waited starts a new round after a backoff wait: every region may be
// tried at once again. moveOn also leaves the current region for the next
// usable one (it failed at the transport level, or refused).
func (rt *route) waited(now time.Time, moveOn bool) {
	clear(rt.tried)
	if moveOn {
		if i := rt.rs.next(rt.cur, now, func(int) bool { return false }); i >= 0 {
			rt.cur = i
		}
	}
	rt.tried[rt.cur] = true
}

// probe asks r's /readyz whether it is back, and reports to its breaker.
// It carries no key, token or body.
func (c *Client) probe(r *region) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	ready := false
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.readyz, nil)
	if err == nil {
		if res, err := c.cfg.HTTPClient.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
			res.Body.Close()
			ready = res.StatusCode == http.StatusOK
		}
	}
	r.br.probed(c.cfg.Clock.Now(), ready)
	c.cfg.Logger.Debug("idemcoord client: region probed", "region", r.name, "url", r.shown, "ready", ready)
}

// refusedUnrun reports a fresh 503 that names no operation: the region
// refused before claiming the key (the owner unreachable from there,
// ownership moving, its store down), so nothing ran and another region
// may answer. Not a region-failover refusal: that is the endpoint's
// policy about the actor's region, the same in every region, and is
// retried after its Retry-After. A 503 that names an operation is the
// owner's verdict and is retried where it is, after the wait.
func refusedUnrun(r *Response) bool {
	return r.Status == http.StatusServiceUnavailable && !r.Replayed && r.OperationID == "" &&
		problemKind(r) != "region-failover"
}

// regionDown reports a refusal that says the region itself cannot serve
// (its store, its shutdown, its load, or its link to the owner), or a 503
// that is not the gateway's at all (a proxy in front with no backend): the
// region's breaker opens as for a transport failure, and a probe of its
// /readyz decides when it takes intents again. Refusals about ownership
// (moving, unknown, misrouted) pass within a second in every region and
// say nothing of this one.
func regionDown(r *Response) bool {
	if !refusedUnrun(r) {
		return false
	}
	switch problemKind(r) {
	case "", "store-unavailable", "shutting-down", "overloaded", "region-unreachable":
		return true
	}
	return false
}

// problemKind returns the last path segment of a problem+json answer's
// type ("region-unreachable"), or "" when the body is not one.
func problemKind(r *Response) string {
	t := newProblem(r).Type
	return t[strings.LastIndex(t, "/")+1:]
}
