package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
)

// serve authenticates and routes one request.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Identity headers are the gateway's to set, never the client's. The
	// hop header is kept aside for routing, which only refuses on it.
	hop := r.Header.Get(HeaderForwardedFrom)
	stripReserved(r.Header)
	r = routing.WithForwardedFrom(r, hop)
	p, authErr := g.cfg.Auth.Verify(r)
	ep, ok := g.router.Match(r.Method, r.URL.Path)
	if !ok || ep.Shadow() {
		w = exchange.WithKeyStatus(w, r, KeyStatusIgnored) // no key is honoured here
	} else {
		w = exchange.WithKeyStatus(w, r, KeyStatusRejected) // until the protocol decides
	}
	if !ok && g.isInternal(r.URL.Path) {
		exchange.WriteProblem(w, exchange.Problem{Type: "not-found", Title: "no such route", Status: http.StatusNotFound}, 0)
		return
	}
	if !ok && authErr != nil && len(r.Header.Values("Authorization")) > 0 {
		// A token that is present but does not verify is refused on every
		// route: passing it on would let the upstream answer as if the
		// caller were anonymous, or judge a token the gateway rejected.
		g.unauthorized(w, r, "", start, authErr)
		return
	}
	if !ok {
		// Uncoordinated: the upstream does its own authorisation; it gets
		// the actor only when the gateway verified one.
		actor := ""
		if authErr == nil {
			actor = p.Scope()
		}
		g.passthrough(w, r, actor, "", start)
		return
	}
	if authErr != nil {
		g.unauthorized(w, r, ep.Name, start, authErr)
		return
	}
	if ep.Shadow() {
		g.shadow(w, r, ep, p.Scope(), start)
		return
	}
	g.coordinate(w, r, ep, p.Scope(), start)
}

// unauthorized answers 401 (writeUnauthorized): nothing was executed.
func (g *Gateway) unauthorized(w http.ResponseWriter, r *http.Request, endpoint string, start time.Time, err error) {
	g.metrics.request(r.Context(), endpoint, "unauthorized", start)
	exchange.WriteUnauthorized(w, err)
}

// reservedPrefix starts every header the gateway sets for the upstream.
const reservedPrefix = "x-idempotency-"

// stripReserved deletes every client header that names a reserved
// X-Idempotency-* header under any spelling: header names are
// case-insensitive, and CGI, WSGI, PHP and Rack upstreams fold '-' and '_'
// into one variable (HTTP_X_IDEMPOTENCY_ACTOR), so X_Idempotency_Actor
// would reach them as the gateway's own identity header.
func stripReserved(h http.Header) {
	for name := range h {
		if reserved(name) {
			delete(h, name)
		}
	}
}

// reserved reports whether name starts with reservedPrefix, in any case
// and with '_' for '-', compared byte by byte without a lowered copy. (A
// non-ASCII byte never matches: no character lowers to the prefix's ASCII
// in as many bytes.)
func reserved(name string) bool {
	if len(name) < len(reservedPrefix) {
		return false
	}
	for i := range len(reservedPrefix) {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == '_':
			c = '-'
		}
		if c != reservedPrefix[i] {
			return false
		}
	}
	return true
}

// isInternal reports whether path is under a resolve path.
func (g *Gateway) isInternal(path string) bool {
	path = "/" + strings.TrimLeft(path, "/")
	for _, p := range g.internal {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
