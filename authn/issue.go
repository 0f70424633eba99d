package authn

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issue returns an HS256 token for p, valid from now for ttl, that a Verifier
// with the same secret, issuer and audience accepts. It is meant for
// development mode and tests; production tokens come from an identity
// provider.
func Issue(secret []byte, issuer, audience string, p Principal, ttl time.Duration, now time.Time) (string, error) {
	if len(secret) < MinSecretBytes {
		return "", fmt.Errorf("authn: issue: secret of %d bytes, at least %d are required", len(secret), MinSecretBytes)
	}
	if issuer == "" || audience == "" {
		return "", errors.New("authn: issue: issuer and audience are required")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("authn: issue: ttl must be positive, got %s", ttl)
	}
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("authn: issue: %w", err)
	}
	c := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   p.Subject,
			Audience:  jwt.ClaimStrings{audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Tenant: p.tenant(),
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("authn: issue: %w", err)
	}
	return tok, nil
}
