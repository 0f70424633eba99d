package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/failover"
)

// newMux routes the gateway's own paths, and every other to root.
func (g *Gateway) newMux(root http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", g.healthz)
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.HandleFunc("GET /v1/operations/{id}", g.operation)
	mux.HandleFunc("DELETE /v1/operations/{id}", g.cancelOperation)
	if g.cfg.Metrics != nil {
		mux.Handle("GET /metrics", g.cfg.Metrics)
	}
	mux.Handle("/", root)
	return mux
}

// healthz answers that the process is up, and whether it is cut off from
// etcd.
func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	if g.cfg.CutOff != nil && g.cfg.CutOff() {
		w.Header().Set(failover.HeaderEtcd, failover.EtcdUnreachable)
	}
	w.Write([]byte("ok\n"))
}

// ownPaths are the paths, and prefixes, newMux routes elsewhere than to
// root.
var ownPaths = []string{"/healthz", "/readyz", "/metrics", "/v1/operations/"}

// rootOnly reports whether the mux would serve r with its root handler
// as it is (no redirect to a cleaned path, none of the gateway's own
// paths): a clean path outside ownPaths, in a request that is neither
// CONNECT nor "*". Such a request skips the mux's matching.
func rootOnly(r *http.Request) bool {
	if r.Method == http.MethodConnect || r.RequestURI == "*" {
		return false
	}
	p := r.URL.EscapedPath()
	if p == "" || p[0] != '/' || path.Clean(p) != p {
		return false
	}
	for _, own := range ownPaths {
		if strings.HasPrefix(p, own) {
			return false
		}
	}
	return true
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rootOnly(r) {
		r.Pattern = "/" // as the mux sets it
		g.root.ServeHTTP(w, r)
		return
	}
	g.mux.ServeHTTP(w, r)
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	// The body names the part that is not usable (store, etcd liveness,
	// ownership cache) and why, for the operator reading a failed probe.
	why := ""
	if err := g.store.Ping(ctx); err != nil {
		why = "store: " + err.Error()
	} else if g.cfg.Ready != nil {
		if err := g.cfg.Ready(ctx); err != nil {
			why = err.Error()
		}
	}
	g.readiness.observe(g.log, g.clock.Now(), why)
	if why != "" {
		http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

// readiness logs each change of the instance's answer to /readyz: a
// balancer (the global entry, Kubernetes) takes the instance out on the
// first failed checks and the probe's body is seen by nobody, so the
// reason is logged once when readiness is lost, and its length when it is
// back. A probe repeating the same state logs nothing.
type readiness struct {
	mu    sync.Mutex
	down  bool
	since time.Time
}

// observe records one /readyz answer: why is "" when ready.
func (r *readiness) observe(log *slog.Logger, now time.Time, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case why != "" && !r.down:
		r.down, r.since = true, now
		log.Warn("not ready: balancers take this instance out", "reason", why)
	case why == "" && r.down:
		r.down = false
		log.Info("ready again", "not_ready_for", now.Sub(r.since).Round(time.Millisecond).String())
	}
}
