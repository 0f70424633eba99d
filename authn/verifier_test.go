package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/clock"
)

var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testKeys are keys generated once per test binary: RSA generation is slow.
type testKeys struct {
	secret        []byte
	rsa, rsaRogue *rsa.PrivateKey
	ec            *ecdsa.PrivateKey
	rsaFile       string
	ecFile        string
	rsaPEM        []byte
}

func newTestKeys(t *testing.T) *testKeys {
	t.Helper()
	k := &testKeys{secret: []byte("0123456789abcdef0123456789abcdef")}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsaRogue, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k.rsaFile, k.rsaPEM = writePublicPEM(t, dir, "rsa-1.pem", &k.rsa.PublicKey)
	k.ecFile, _ = writePublicPEM(t, dir, "ec-1.pem", &k.ec.PublicKey)
	return k
}

// writePublicPEM writes pub as a PKIX "PUBLIC KEY" PEM file.
func writePublicPEM(t *testing.T, dir, name string, pub any) (string, []byte) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// baseClaims are valid claims at testNow; tests change one thing each.
func baseClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss":    "idemcoord-test",
		"aud":    "idemcoord",
		"sub":    "alice",
		"tenant": "acme",
		"iat":    testNow.Add(-time.Minute).Unix(),
		"exp":    testNow.Add(time.Hour).Unix(),
	}
}

// sign returns a token of claims c (after edit) signed with m and key.
func sign(t *testing.T, m jwt.SigningMethod, key any, kid string, edit func(jwt.MapClaims)) string {
	t.Helper()
	c := baseClaims()
	if edit != nil {
		edit(c)
	}
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testConfig(k *testKeys) Config {
	return Config{
		Issuer:         "idemcoord-test",
		Audience:       "idemcoord",
		HS256Secret:    k.secret,
		PublicKeyFiles: []string{k.rsaFile, k.ecFile},
		Clock:          clock.NewFake(testNow),
	}
}

func TestVerify(t *testing.T) {
	k := newTestKeys(t)
	all, err := NewVerifier(testConfig(k))
	if err != nil {
		t.Fatal(err)
	}
	rsaCfg := testConfig(k)
	rsaCfg.HS256Secret, rsaCfg.PublicKeyFiles = nil, []string{k.rsaFile}
	rsaOnly, err := NewVerifier(rsaCfg)
	if err != nil {
		t.Fatal(err)
	}
	acme := Principal{Tenant: "acme", Subject: "alice"}
	set := func(name string, v any) func(jwt.MapClaims) {
		return func(c jwt.MapClaims) { c[name] = v }
	}
	del := func(name string) func(jwt.MapClaims) {
		return func(c jwt.MapClaims) { delete(c, name) }
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

	tests := []struct {
		name    string
		v       *Verifier
		header  http.Header
		want    Principal
		wantErr error // nil: success
	}{
		{"HS256", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", nil)), acme, nil},
		{"RS256 with kid", all, bearer(sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", nil)), acme, nil},
		{"RS256 without kid", all, bearer(sign(t, jwt.SigningMethodRS256, k.rsa, "", nil)), acme, nil},
		{"RS256 unknown kid tries all RSA keys", all, bearer(sign(t, jwt.SigningMethodRS256, k.rsa, "idp-42", nil)), acme, nil},
		{"ES256", all, bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", nil)), acme, nil},
		{"lower-case scheme", all, http.Header{"Authorization": {"bearer " + sign(t, jwt.SigningMethodHS256, k.secret, "", nil)}}, acme, nil},
		{"no tenant is default", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", del("tenant"))), Principal{Tenant: "default", Subject: "alice"}, nil},
		{"expired within leeway", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("exp", testNow.Add(-10*time.Second).Unix()))), acme, nil},
		{"aud list", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("aud", []string{"other", "idemcoord"}))), acme, nil},

		{"expired", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("exp", testNow.Add(-time.Minute).Unix()))), Principal{}, jwt.ErrTokenExpired},
		{"no exp", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", del("exp"))), Principal{}, jwt.ErrTokenRequiredClaimMissing},
		{"not yet valid", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("nbf", testNow.Add(time.Minute).Unix()))), Principal{}, jwt.ErrTokenNotValidYet},
		{"issued in the future", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("iat", testNow.Add(time.Minute).Unix()))), Principal{}, jwt.ErrTokenUsedBeforeIssued},
		{"wrong issuer", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("iss", "evil"))), Principal{}, jwt.ErrTokenInvalidIssuer},
		{"wrong audience", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("aud", "billing"))), Principal{}, jwt.ErrTokenInvalidAudience},
		{"wrong secret", all, bearer(sign(t, jwt.SigningMethodHS256, []byte("ffffffffffffffffffffffffffffffff"), "", nil)), Principal{}, jwt.ErrTokenSignatureInvalid},
		{"untrusted RSA key", all, bearer(sign(t, jwt.SigningMethodRS256, k.rsaRogue, "rsa-1", nil)), Principal{}, jwt.ErrTokenSignatureInvalid},
		{"alg none", all, bearer(sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", nil)), Principal{}, jwt.ErrTokenSignatureInvalid},
		{"alg confusion: HS256 keyed with RSA public key", rsaOnly, bearer(sign(t, jwt.SigningMethodHS256, k.rsaPEM, "rsa-1", nil)), Principal{}, jwt.ErrTokenSignatureInvalid},
		{"alg confusion with a secret configured", all, bearer(sign(t, jwt.SigningMethodHS256, k.rsaPEM, "rsa-1", nil)), Principal{}, jwt.ErrTokenSignatureInvalid},
		{"ES256 on an RSA-only verifier", rsaOnly, bearer(sign(t, jwt.SigningMethodES256, k.ec, "", nil)), Principal{}, jwt.ErrTokenSignatureInvalid},
		{"tenant with slash", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("tenant", "acme/evil"))), Principal{}, ErrInvalidToken},
		{"subject with control char", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("sub", "al\nice"))), Principal{}, ErrInvalidToken},
		{"subject too long", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("sub", strings.Repeat("a", 129)))), Principal{}, ErrInvalidToken},
		{"no subject", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", del("sub"))), Principal{}, ErrInvalidToken},
		{"tenant not a string", all, bearer(sign(t, jwt.SigningMethodHS256, k.secret, "", set("tenant", 7))), Principal{}, ErrInvalidToken},
		{"garbage", all, bearer("not-a.jwt"), Principal{}, jwt.ErrTokenMalformed},
		{"oversized", all, bearer(strings.Repeat("a", maxTokenBytes+1)), Principal{}, ErrInvalidToken},
		{"two headers", all, http.Header{"Authorization": {"Bearer a.b.c", "Bearer d.e.f"}}, Principal{}, ErrInvalidToken},
		{"missing header", all, http.Header{}, Principal{}, ErrNoToken},
		{"basic scheme", all, http.Header{"Authorization": {"Basic YWxpY2U6cHc="}}, Principal{}, ErrNoToken},
		{"empty bearer", all, http.Header{"Authorization": {"Bearer   "}}, Principal{}, ErrNoToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "/v1/payments", nil)
			r.Header = tt.header
			got, err := tt.v.Verify(r)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("principal (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
			if !errors.Is(err, ErrNoToken) && !errors.Is(err, ErrInvalidToken) {
				t.Errorf("error %v wraps neither ErrNoToken nor ErrInvalidToken", err)
			}
			if got != (Principal{}) {
				t.Errorf("principal = %+v on error, want zero", got)
			}
			if _, tok, _ := strings.Cut(tt.header.Get("Authorization"), " "); len(tok) > 8 && strings.Contains(err.Error(), tok) {
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
}
