package gateway

import (
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/gateway/routing"
)

// cancelOperation serves DELETE /v1/operations/{id}: the identity part
// (as serve does: reserved headers stripped, the hop header kept aside
// for routing, the caller authenticated), then the async stage's cancel
// (async.Stage.Cancel).
func (g *Gateway) cancelOperation(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	hop := r.Header.Get(HeaderForwardedFrom) // as serve does: routing refuses a second hop
	stripReserved(r.Header)
	r = routing.WithForwardedFrom(r, hop)
	p, err := g.cfg.Auth.Verify(r)
	if err != nil {
		exchange.WriteUnauthorized(w, err)
		return
	}
	g.async.Cancel(w, r, p.Scope(), start)
}
