package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestRegionUnavailableHasRetryAfter: when the fence keeps refusing
// (coordinate's four rounds run out), the gateway answers 503
// region-unavailable without Retry-After; the contract requires it on
// every 503.
func TestRegionUnavailableHasRetryAfter(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })
	srv := serveWrapped(t, staleForever{openStore(t, 4)}, "", h)
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "k", `{}`))
	if st != http.StatusServiceUnavailable {
		t.Fatalf("status %d %s, want 503", st, b)
	}
	if hd.Get("Retry-After") == "" {
		t.Fatalf("503 %s without Retry-After", b)
	}
}

// TestOperationViewHasStatus: the contract's GET /v1/operations/{id}
// document has a top-level "status"; operationView has none.
func TestOperationViewHasStatus(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"id":1}`)
	})
	srv := serveWrapped(t, openStore(t, 4), "", h)
	alice := token(t, "alice")
	st, hd, _ := do(t, post(t, srv.URL+"/v1/things", alice, "view-1", `{}`))
	if st != 201 {
		t.Fatalf("first run %d", st)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/operations/"+hd.Get(gateway.HeaderOperationID), nil)
	req.Header.Set("Authorization", alice)
	code, _, body := do(t, req)
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 {
		t.Fatalf("GET operation: %d %s %v", code, body, err)
	}
	for _, f := range []string{"operation_id", "state", "status", "attempts", "created_at", "updated_at", "response"} {
		if _, ok := v[f]; !ok {
			t.Errorf("operation document lacks %q: %s", f, body)
		}
	}
}

// TestUnmatchedRouteNeedsNoToken: the contract requires a bearer
// token on coordinated endpoints, and config says requests matching no
// endpoint "pass through uncoordinated"; serve() authenticates every
// request first, so an unauthenticated request to an uncoordinated route
// (a public page, a webhook, the upstream's own health check) gets 401.
func TestUnmatchedRouteNeedsNoToken(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "public") })
	srv := serveWrapped(t, openStore(t, 4), "", h)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/public/status", nil)
	if st, _, b := do(t, req); st != http.StatusOK {
		t.Fatalf("uncoordinated route without a token: %d %s, want it passed through", st, b)
	}
}
