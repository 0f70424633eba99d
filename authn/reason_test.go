package authn

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestEveryRefusedTokenIsToldWhy: each way Verify refuses a request gets
// its own Reason naming the check that failed (the 401's detail), and no
// reason quotes the token or a claim's value.
func TestEveryRefusedTokenIsToldWhy(t *testing.T) {
	k := newTestKeys(t)
	v, err := NewVerifier(testConfig(k))
	if err != nil {
		t.Fatal(err)
	}
	set := func(name string, val any) func(jwt.MapClaims) {
		return func(c jwt.MapClaims) { c[name] = val }
	}
	hs := func(edit func(jwt.MapClaims)) string { return sign(t, jwt.SigningMethodHS256, k.secret, "", edit) }
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	tests := []struct {
		name   string
		header http.Header
		want   string // a phrase the reason must contain
	}{
		{"no header", http.Header{}, "no Authorization header"},
		{"basic scheme", http.Header{"Authorization": {"Basic YWxpY2U6cHc="}}, "scheme is not Bearer"},
		{"empty bearer", http.Header{"Authorization": {"Bearer  "}}, "empty bearer token"},
		{"two headers", http.Header{"Authorization": {"Bearer a.b.c", "Bearer d.e.f"}}, "more than one Authorization header"},
		{"oversized", bearer(strings.Repeat("a", maxTokenBytes+1)), "longer than 8 KiB"},
		{"garbage", bearer("not-a.jwt"), "not a well-formed JWT"},
		{"wrong secret", bearer(sign(t, jwt.SigningMethodHS256, []byte("ffffffffffffffffffffffffffffffff"), "", nil)), "signature"},
		{"alg none", bearer(sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", nil)), "signature"},
		{"expired", bearer(hs(set("exp", testNow.Add(-time.Hour).Unix()))), "expired (exp)"},
		{"not yet valid", bearer(hs(set("nbf", testNow.Add(time.Hour).Unix()))), "not valid yet (nbf)"},
		{"issued in the future", bearer(hs(set("iat", testNow.Add(time.Hour).Unix()))), "(iat)"},
		{"wrong issuer", bearer(hs(set("iss", "evil-issuer"))), "issuer (iss)"},
		{"wrong audience", bearer(hs(set("aud", "billing-aud"))), "audience (aud)"},
		{"no exp", bearer(hs(func(c jwt.MapClaims) { delete(c, "exp") })), "lacks a required claim"},
		{"subject with slash", bearer(hs(set("sub", "ali/ce-subject"))), "subject: contains '/'"},
		{"no subject", bearer(hs(func(c jwt.MapClaims) { delete(c, "sub") })), "subject: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "/v1/payments", nil)
			r.Header = tt.header
			_, err := v.Verify(r)
			if err == nil {
				t.Fatal("Verify accepted the request")
			}
			got := Reason(err)
			if !strings.Contains(got, tt.want) {
				t.Errorf("Reason(%v) = %q, want it to say %q", err, got, tt.want)
			}
			for _, secret := range []string{"evil-issuer", "billing-aud", "ali/ce-subject"} {
				if strings.Contains(got, secret) {
					t.Errorf("Reason %q quotes the claim value %q", got, secret)
				}
			}
			for _, h := range tt.header.Values("Authorization") {
				if _, tok, _ := strings.Cut(h, " "); len(tok) > 8 && strings.Contains(got, tok) {
					t.Errorf("Reason %q quotes the token", got)
				}
			}
		})
	}
}
