package authn_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/clock"
)

func ExampleVerifier_Verify() {
	secret := []byte("dev-secret-dev-secret-dev-secret") // 32 bytes
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	v, err := authn.NewVerifier(authn.Config{
		Issuer:      "idemcoord-dev",
		Audience:    "idemcoord",
		HS256Secret: secret,
		Clock:       clock.NewFake(now),
	})
	if err != nil {
		panic(err)
	}
	tok, err := authn.Issue(secret, "idemcoord-dev", "idemcoord",
		authn.Principal{Tenant: "acme", Subject: "alice"}, time.Hour, now)
	if err != nil {
		panic(err)
	}
	r, _ := http.NewRequest(http.MethodPost, "/v1/payments", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	p, err := v.Verify(r)
	fmt.Println(p.Scope(), err)
	// Output: acme/alice <nil>
}
