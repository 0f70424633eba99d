package gateway

import (
	"github.com/idemcoord/idemcoord/failover"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestARequestSkipsTheMuxOnlyWhereTheMuxWouldServeItAtTheRoot: the
// requests rootOnly sends straight to the root handler are exactly ones
// the gateway's mux serves with that handler, as they are: no redirect to
// a cleaned path, none of the gateway's own paths (health, readiness,
// operations, metrics), in any method; and it sends the plain
// coordinated requests (clean paths elsewhere) that way.
func TestARequestSkipsTheMuxOnlyWhereTheMuxWouldServeItAtTheRoot(t *testing.T) {
	g := &Gateway{cfg: Config{Metrics: http.NotFoundHandler()}}
	var atRoot bool
	mux := g.newMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atRoot = r.Pattern == "/"
	}))
	paths := []string{"/", "/v1/things", "/v1/things/", "/v1//things", "/v1/./things", "/v1/../things", "/healthz",
		"/healthz/", "/healthzx", "/readyz", "/metrics", "/metricsx", "/v1/operations/x", "/v1/operations",
		"/v1/operations/", "/v1/operations/x/y", "/V1/things", "/a%2Fb", "/a%20b", "/a b", "/%7Ezz", "/v1/things?x=1"}
	skipped := 0
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT"} {
		for _, p := range paths {
			r := httptest.NewRequest(method, "http://gw"+strings.ReplaceAll(p, " ", "%20"), nil)
			if p == "/a b" {
				r.URL.Path, r.URL.RawPath = "/a b", ""
			}
			if !rootOnly(r) {
				continue
			}
			skipped++
			atRoot = false
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r)
			if !atRoot || rec.Code != http.StatusOK {
				t.Errorf("%s %s skips the mux, which answers it %d (at the root: %v)", method, r.URL, rec.Code, atRoot)
			}
		}
	}
	for _, p := range []string{"/v1/things", "/v1/payments/p-1/capture", "/"} {
		if !rootOnly(httptest.NewRequest("POST", "http://gw"+p, nil)) {
			t.Errorf("POST %s goes through the mux", p)
		}
	}
	if skipped == 0 {
		t.Fatal("no request skipped the mux")
	}
	star := httptest.NewRequest("OPTIONS", "http://gw/", nil)
	star.RequestURI = "*"
	if rootOnly(star) {
		t.Error(`OPTIONS * skips the mux`)
	}
}

// /healthz stays 200 "ok" (the process is up) and says, in a header the
// other regions' failover probe reads, when the instance knows it cannot
// reach etcd.
func TestHealthzSaysWhenTheInstanceIsCutOffFromEtcd(t *testing.T) {
	for _, cut := range []bool{false, true} {
		g := &Gateway{cfg: Config{CutOff: func() bool { return cut }}}
		rec := httptest.NewRecorder()
		g.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		got := rec.Header().Get(failover.HeaderEtcd)
		if rec.Code != http.StatusOK || rec.Body.String() != "ok\n" || (got == failover.EtcdUnreachable) != cut {
			t.Errorf("cut off %v: %d %q, %s: %q", cut, rec.Code, rec.Body.String(), failover.HeaderEtcd, got)
		}
	}
}
