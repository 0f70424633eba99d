package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestReservedHeadersStrippedUnderEverySpelling: X-Idempotency-* headers
// are the gateway's to set. A client's copy under another spelling
// (X_Idempotency_Actor, x-idempotency_operation-id) must not reach the
// upstream: CGI, WSGI, PHP and Rack fold '-' and '_' into one variable,
// so it would pass for the gateway's own.
func TestReservedHeadersStrippedUnderEverySpelling(t *testing.T) {
	spoofed := []string{"X_Idempotency_Actor", "x-idempotency_actor", "X_IDEMPOTENCY_OPERATION_ID",
		"X-Idempotency-Region", "x_idempotency-anything"}
	normalise := func(name string) string { return strings.ReplaceAll(strings.ToLower(name), "_", "-") }
	var mu sync.Mutex
	var seen []http.Header
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	up := httptest.NewServer(record)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	_, proxied := serveGateway(t, "w", openStore(t, 8), nil, u, "")
	wrapped := serveWrapped(t, openStore(t, 8), "", record)
	alice := token(t, "alice")
	for _, tc := range []struct{ name, url, path, key string }{
		{"proxy coordinated", proxied.URL, "/v1/things", "k-1"},
		{"proxy uncoordinated", proxied.URL, "/v1/other", ""},
		{"middleware coordinated", wrapped.URL, "/v1/things", "k-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			req := post(t, tc.url+tc.path, alice, tc.key, `{}`)
			for _, name := range spoofed {
				req.Header[name] = []string{"t/mallory"}
			}
			if st, hd, b := do(t, req); st != http.StatusCreated {
				t.Fatalf("answer %s", describe(st, hd, b))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("upstream saw %d requests", len(seen))
			}
			for name, vs := range seen[0] {
				n := normalise(name)
				if !strings.HasPrefix(n, "x-idempotency-") {
					continue
				}
				for _, v := range vs {
					if v == "t/mallory" {
						t.Errorf("upstream got the client's %s: %q", name, v)
					}
				}
				if n == normalise(gateway.HeaderActor) && (name != gateway.HeaderActor || len(vs) != 1 || vs[0] != "t/alice") {
					t.Errorf("upstream's actor header %s=%q, want only %s=t/alice", name, vs, gateway.HeaderActor)
				}
			}
		})
	}
}
