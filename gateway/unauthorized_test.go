package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
)

// TestA401SaysWhatIsWrongWithTheToken: every 401 (a coordinated POST, an
// uncoordinated route, GET and DELETE /v1/operations/{id}) is a problem
// whose detail names the check the token failed, with an RFC 6750
// challenge (error="invalid_token" when a token was presented); it never
// quotes the token, and nothing runs.
func TestA401SaysWhatIsWrongWithTheToken(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "", countingHandler(&runs))
	expired, err := authn.Issue(secret, issuer, audience, authn.Principal{Tenant: "t", Subject: "alice"},
		time.Minute, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	otherAud, err := authn.Issue(secret, issuer, "billing", authn.Principal{Tenant: "t", Subject: "alice"},
		time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const op = "/v1/operations/01a2355d-3aff-738e-a7ab-3b5333b9107a"
	for _, tc := range []struct {
		name, method, path, auth string
		want                     string // in the detail and the challenge
		presented                bool
	}{
		{"POST, no token", http.MethodPost, "/v1/things", "", "no Authorization header", false},
		{"POST, expired", http.MethodPost, "/v1/things", "Bearer " + expired, "expired", true},
		{"POST, other audience", http.MethodPost, "/v1/things", "Bearer " + otherAud, "audience", true},
		{"uncoordinated, malformed", http.MethodGet, "/public/status", "Bearer not-a-jwt", "not a well-formed JWT", true},
		{"GET operation, no token", http.MethodGet, op, "", "no Authorization header", false},
		{"GET operation, expired", http.MethodGet, op, "Bearer " + expired, "expired", true},
		{"DELETE operation, basic", http.MethodDelete, op, "Basic YWxpY2U6cHc=", "not Bearer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := post(t, srv.URL+tc.path, tc.auth, "k-401", `{"amount":1}`)
			req.Method = tc.method
			if tc.auth == "" {
				req.Header.Del("Authorization")
			}
			st, hd, b := do(t, req)
			if st != http.StatusUnauthorized {
				t.Fatalf("%s, want 401", describe(st, hd, b))
			}
			var p struct{ Type, Detail string }
			if err := json.Unmarshal([]byte(b), &p); err != nil || !strings.HasSuffix(p.Type, "/unauthorized") {
				t.Fatalf("401 body %s: want an unauthorized problem (%v)", b, err)
			}
			if strings.Contains(b, `\u00`) {
				t.Errorf("401 body %s carries escaped characters a person reading it cannot read", b)
			}
			if !strings.Contains(p.Detail, tc.want) {
				t.Errorf("401 detail %q does not say %q", p.Detail, tc.want)
			}
			ch := hd.Get("WWW-Authenticate")
			if !strings.HasPrefix(ch, "Bearer ") {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge", ch)
			}
			if got := strings.Contains(ch, `error="invalid_token"`); got != tc.presented {
				t.Errorf("WWW-Authenticate %q: invalid_token %v, want %v", ch, got, tc.presented)
			}
			if tc.presented && !strings.Contains(ch, tc.want) {
				t.Errorf("WWW-Authenticate %q does not describe %q", ch, tc.want)
			}
			if _, tok, _ := strings.Cut(tc.auth, " "); len(tok) > 8 && (strings.Contains(b, tok) || strings.Contains(ch, tok)) {
				t.Errorf("401 quotes the token")
			}
		})
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("upstream ran %d times, want 0", n)
	}
}
