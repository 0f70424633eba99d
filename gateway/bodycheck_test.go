package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// countingHandler answers 201 with the body it read and counts its runs.
func countingHandler(runs *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"ok":true}`))
	})
}

// serveWithBudget is serveWrapped with a given fingerprint budget.
func serveWithBudget(t testing.TB, b *gateway.FingerprintBudget, extra string, h http.Handler) *httptest.Server {
	t.Helper()
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 8), Auth: verifier(t),
		Endpoints: endpoints(t, extra), FingerprintBudget: b}, h)
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

// TestJSONEndpointRefusesOtherMediaTypesBeforeClaiming checks that a POST
// endpoint (body json by default) answers 415 to a body of another media
// type (what `curl -d` sends) without running or claiming anything, and
// that the same key then works with a JSON body.
func TestJSONEndpointRefusesOtherMediaTypesBeforeClaiming(t *testing.T) {
	var runs atomic.Int64
	srv := serveWithBudget(t, nil, "", countingHandler(&runs))
	auth := token(t, "alice")
	tests := []struct {
		name, ct, body string
		want           int
	}{
		{"form, as curl -d sends", "application/x-www-form-urlencoded", `{"amount":1}`, http.StatusUnsupportedMediaType},
		{"text", "text/plain", `{"amount":1}`, http.StatusUnsupportedMediaType},
		{"no content type", "", `{"amount":1}`, http.StatusUnsupportedMediaType},
		{"json-looking non-JSON type", "application/jsonx", `{"amount":1}`, http.StatusUnsupportedMediaType},
		{"json with charset", "application/json; charset=utf-8", `{"amount":1}`, http.StatusCreated},
		{"json upper case", "Application/JSON", `{"amount":2}`, http.StatusCreated},
		{"+json with parameter", "application/merge-patch+json; charset=utf-8", `{"amount":3}`, http.StatusCreated},
		{"empty body without content type", "", ``, http.StatusCreated},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "media-" + string(rune('a'+i))
			before := runs.Load()
			req := post(t, srv.URL+"/v1/things", auth, key, tt.body)
			req.Header.Del("Content-Type")
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			status, h, body := do(t, req)
			if status != tt.want {
				t.Fatalf("status = %d, want %d: %s", status, tt.want, body)
			}
			if tt.want != http.StatusUnsupportedMediaType {
				return
			}
			var p struct {
				Type       string `json:"type"`
				NewKeySafe bool   `json:"new_key_safe"`
			}
			if err := json.Unmarshal([]byte(body), &p); err != nil || !strings.HasSuffix(p.Type, "/unsupported-media-type") || !p.NewKeySafe {
				t.Errorf("problem = %s (%v), want type unsupported-media-type, new_key_safe", body, err)
			}
			if got := h.Get("Accept-Post"); got != "application/json" {
				t.Errorf("Accept-Post = %q, want application/json", got)
			}
			if runs.Load() != before {
				t.Fatalf("the handler ran for a refused body")
			}
			// Nothing was claimed: the key is free for the JSON request.
			if status, _, body := do(t, post(t, srv.URL+"/v1/things", auth, key, tt.body)); status != http.StatusCreated {
				t.Fatalf("same key with a JSON body: status %d, want 201: %s", status, body)
			}
		})
	}
}

// TestAnyBodyEndpointTakesEveryMediaType checks that `body: any` keeps
// the media type free (and the body compared byte for byte).
func TestAnyBodyEndpointTakesEveryMediaType(t *testing.T) {
	var runs atomic.Int64
	srv := serveWithBudget(t, nil, "    body: any\n", countingHandler(&runs))
	auth := token(t, "bob")
	req := post(t, srv.URL+"/v1/things", auth, "form-1", "amount=1&currency=EUR")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if status, _, body := do(t, req); status != http.StatusCreated || runs.Load() != 1 {
		t.Fatalf("status = %d after %d runs, want 201 after 1: %s", status, runs.Load(), body)
	}
}

// TestLoneSurrogateBodyIs400NotAReplay checks that, at the HTTP level, a
// body with a lone surrogate escape is refused with 400 before claiming,
// so it can never replay the answer of the request with "\ufffd".
func TestLoneSurrogateBodyIs400NotAReplay(t *testing.T) {
	var runs atomic.Int64
	srv := serveWithBudget(t, nil, "", countingHandler(&runs))
	auth := token(t, "frank")
	if s, _, b := do(t, post(t, srv.URL+"/v1/things", auth, "sur-1", `{"name":"\ufffd"}`)); s != http.StatusCreated {
		t.Fatalf("U+FFFD body: %d, want 201: %s", s, b)
	}
	for _, body := range []string{`{"name":"\ud800"}`, `{"name":"\udbff"}`} {
		s, _, b := do(t, post(t, srv.URL+"/v1/things", auth, "sur-1", body))
		if s != http.StatusBadRequest || !strings.Contains(b, "/malformed-body") {
			t.Errorf("%s under the key of the U+FFFD request: %d %s, want 400 malformed-body", body, s, b)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
}
