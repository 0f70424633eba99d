package gateway_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestBadTokenIsRefusedOnEveryRoute: a bearer token that is present but
// does not verify is 401 on coordinated and uncoordinated routes alike;
// no token at all still passes an uncoordinated route through.
func TestBadTokenIsRefusedOnEveryRoute(t *testing.T) {
	var calls atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	})
	srv := serveWrapped(t, openStore(t, 4), "", h)
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
		wantCalls                int64
	}{
		{"uncoordinated, bad token", http.MethodGet, "/public/status", "Bearer not-a-jwt", http.StatusUnauthorized, 0},
		{"uncoordinated, bad scheme", http.MethodPost, "/v1/other", "Basic YWxpY2U6cHc=", http.StatusUnauthorized, 0},
		{"uncoordinated, empty", http.MethodGet, "/public/status", " ", http.StatusUnauthorized, 0},
		{"uncoordinated, no token", http.MethodGet, "/public/status", "", http.StatusOK, 1},
		{"coordinated, bad token", http.MethodPost, "/v1/things", "Bearer not-a-jwt", http.StatusUnauthorized, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			req.Header.Set("Idempotency-Key", "k-1")
			st, hd, b := do(t, req)
			if st != tc.want || calls.Load() != tc.wantCalls {
				t.Fatalf("%s, upstream called %d times; want %d and %d calls", describe(st, hd, b), calls.Load(), tc.want, tc.wantCalls)
			}
			if st == http.StatusUnauthorized && hd.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
}
