package devstate

import (
	"time"

	"github.com/idemcoord/idemcoord/authn"
)

// Regions are the dev cluster's regions, in port order.
var Regions = []string{"us-east", "eu-west", "ap-south"}

// Dev cluster identity: tokens for it are signed with its generated secret.
const (
	Issuer   = "idemcoord-dev"
	Audience = "idemcoord"
)

// Tenant is the tenant of every dev cluster token: an actor NAME's scope
// is Tenant + "/" + NAME.
const Tenant = "demo"

// Token signs a dev cluster token with a hex secret (see State).
func Token(hexSecret, actor string, ttl time.Duration) (string, error) {
	secret := []byte(hexSecret)
	return authn.Issue(secret, Issuer, Audience, authn.Principal{Tenant: Tenant, Subject: actor}, ttl, time.Now())
}
