package authn

import (
	"errors"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// The causes Verify tells apart inside ErrNoToken and ErrInvalidToken, so
// that Reason can name them.
var (
	errNotBearer      = errors.New("authorization scheme is not Bearer")
	errEmptyToken     = errors.New("empty bearer token")
	errSeveralHeaders = errors.New("more than one Authorization header")
	errTooLong        = errors.New("token too long")
	errNoActor        = errors.New("claims name no usable actor")
)

// Reason says, for the client, why Verify refused a request: which check
// failed (no token, another scheme, a malformed token, its signature or
// algorithm, exp, nbf or iat, iss, aud, a required claim, an actor its
// claims cannot name). It never quotes the token or a claim's value, so it
// may go into a 401's problem detail and WWW-Authenticate. An error Verify
// did not return gets a generic sentence.
func Reason(err error) string {
	switch {
	case errors.Is(err, errNotBearer):
		return "the Authorization header's scheme is not Bearer: send Authorization: Bearer followed by a JWT"
	case errors.Is(err, errEmptyToken):
		return "the Authorization header carries an empty bearer token"
	case errors.Is(err, ErrNoToken):
		return "no Authorization header: this endpoint needs a JWT in Authorization: Bearer"
	case errors.Is(err, errSeveralHeaders):
		return "more than one Authorization header: send exactly one"
	case errors.Is(err, errTooLong):
		return "the bearer token is longer than 8 KiB"
	case errors.Is(err, errNoActor):
		// The principal's own error names the claim and why, never its value.
		_, why, _ := strings.Cut(err.Error(), errNoActor.Error()+": ")
		why = strings.NewReplacer(`"`, "'", "\n", "; ").Replace(why)
		return "the token's sub or tenant claim cannot name an actor: " + why
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the bearer token is not a well-formed JWT"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the bearer token's signature does not verify with an accepted algorithm and key"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the bearer token has expired (exp)"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "the bearer token is not valid yet (nbf)"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the bearer token is issued in the future (iat)"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the bearer token's issuer (iss) is not the one this server accepts"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the bearer token's audience (aud) does not name this server"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the bearer token lacks a required claim (exp, iss and aud are required)"
	}
	return "the bearer token does not verify"
}
