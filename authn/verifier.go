package authn

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idemcoord/idemcoord/clock"
)

// Errors returned by Verify. Both map to 401; they are told apart for
// metrics and logs. Their detail never quotes the token.
var (
	// ErrNoToken means the request carries no bearer token: no
	// Authorization header, another scheme, or an empty token.
	ErrNoToken = errors.New("authn: no bearer token")
	// ErrInvalidToken means the token is malformed, badly signed, expired,
	// not yet valid, for another issuer or audience, or names an unusable
	// principal. The detail may wrap a jwt error such as
	// jwt.ErrTokenExpired.
	ErrInvalidToken = errors.New("authn: invalid token")
)

// maxTokenBytes bounds the token parsed: real JWTs are well under 2 KiB, and
// a cap keeps a hostile header from costing a base64 and JSON pass over
// megabytes.
const maxTokenBytes = 8 << 10

// Algorithms accepted, each with keys of its own kind only.
const (
	algHS256 = "HS256"
	algRS256 = "RS256"
	algES256 = "ES256"
)

// Verifier checks bearer tokens against a Config. It is safe for concurrent
// use.
type Verifier struct {
	secret []byte
	rsa    keySet
	ec     keySet
	parser *jwt.Parser
	// cache remembers tokens that verified (cache.go); nil when off.
	cache  *tokenCache
	clock  clock.Clock
	leeway time.Duration
}

// NewVerifier validates cfg and loads its public key files. An error about
// a key file names the file.
func NewVerifier(cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("authn: config: %w", err)
	}
	v := &Verifier{cache: cfg.cache(), clock: clock.Or(cfg.Clock), leeway: cfg.leeway()}
	if len(cfg.HS256Secret) > 0 {
		v.secret = append([]byte(nil), cfg.HS256Secret...)
	}
	seen := map[string]string{} // kid -> file
	for _, f := range cfg.PublicKeyFiles {
		k, err := loadPublicKey(f)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[k.kid]; dup {
			return nil, fmt.Errorf("authn: public key %s: kid %q is already used by %s", f, k.kid, prev)
		}
		seen[k.kid] = f
		// parsePublicKeyPEM returns RSA or P-256 keys only.
		if _, ok := k.key.(*rsa.PublicKey); ok {
			v.rsa = append(v.rsa, k)
		} else {
			v.ec = append(v.ec, k)
		}
	}

	var methods []string
	if v.secret != nil {
		methods = append(methods, algHS256)
	}
	if len(v.rsa) > 0 {
		methods = append(methods, algRS256)
	}
	if len(v.ec) > 0 {
		methods = append(methods, algES256)
	}
	opts := []jwt.ParserOption{
		// The allow-list is what stops "alg":"none" and algorithm
		// confusion; the Keyfunc checks the key kind again.
		jwt.WithValidMethods(methods),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.leeway()),
		jwt.WithStrictDecoding(),
	}
	// One clock for the check and the cache's bounds.
	opts = append(opts, jwt.WithTimeFunc(v.clock.Now))
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Verify authenticates r from its "Authorization: Bearer" header. It returns
// an error wrapping ErrNoToken or ErrInvalidToken.
func (v *Verifier) Verify(r *http.Request) (Principal, error) {
	tok, err := bearerToken(r.Header)
	if err != nil {
		return Principal{}, err
	}
	return v.VerifyToken(tok)
}

// VerifyToken checks a raw JWT: signature with a key of the algorithm's own
// kind, exp (required), nbf and iat (if present) within the leeway, iss, aud,
// and a usable sub and tenant. It returns an error wrapping ErrInvalidToken.
// A token that verified is remembered (Config.CacheMaxAge) and its repeats
// within those bounds return the same principal without the check.
func (v *Verifier) VerifyToken(raw string) (Principal, error) {
	if len(raw) > maxTokenBytes {
		return Principal{}, fmt.Errorf("%w: %w: %d bytes, at most %d", ErrInvalidToken, errTooLong, len(raw), maxTokenBytes)
	}
	if v.cache == nil {
		p, _, err := v.check(raw)
		return p, err
	}
	now := v.clock.Now()
	if p, ok := v.cache.get(raw, now); ok {
		return p, nil
	}
	p, exp, err := v.check(raw)
	if err != nil {
		return Principal{}, err
	}
	// The parser accepts the token while now is before exp + leeway.
	v.cache.put(raw, p, now, exp.Add(v.leeway))
	return p, nil
}

// check verifies raw fully and returns its principal and expiry (exp).
func (v *Verifier) check(raw string) (Principal, time.Time, error) {
	var c tokenClaims
	if _, err := v.parser.ParseWithClaims(raw, &c, v.keyFor); err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	p := Principal{Tenant: c.Tenant, Subject: c.Subject}
	if p.Tenant == "" {
		p.Tenant = DefaultTenant
	}
	if err := p.Validate(); err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("%w: %w: %w", ErrInvalidToken, errNoActor, err)
	}
	// exp is required (WithExpirationRequired): present once parsed.
	return p, c.ExpiresAt.Time, nil
}

// keyFor is the jwt.Keyfunc: it returns only keys of the kind the token's
// algorithm needs, narrowed by "kid" when the token names one of ours.
func (v *Verifier) keyFor(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	var set keySet
	switch t.Method.Alg() {
	case algHS256:
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok || v.secret == nil {
			return nil, errors.New("no HS256 secret configured")
		}
		return v.secret, nil
	case algRS256:
		if _, ok := t.Method.(*jwt.SigningMethodRSA); !ok {
			return nil, errors.New("RS256 is not RSA PKCS#1 v1.5")
		}
		set = v.rsa
	case algES256:
		if _, ok := t.Method.(*jwt.SigningMethodECDSA); !ok {
			return nil, errors.New("ES256 is not ECDSA")
		}
		set = v.ec
	default:
		return nil, fmt.Errorf("algorithm %q not accepted", t.Method.Alg())
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("no %s key configured", t.Method.Alg())
	}
	var ks jwt.VerificationKeySet
	for _, k := range set.pick(kid) {
		ks.Keys = append(ks.Keys, k)
	}
	return ks, nil
}

// tokenClaims are the claims idemcoord reads.
type tokenClaims struct {
	jwt.RegisteredClaims
	// Tenant is the actor's tenant; absent or empty means DefaultTenant.
	Tenant string `json:"tenant,omitempty"`
}

// bearerToken returns the token of the request's Authorization header.
func bearerToken(h http.Header) (string, error) {
	vals := h.Values("Authorization")
	switch {
	case len(vals) == 0:
		return "", ErrNoToken
	case len(vals) > 1:
		// Two credentials are ambiguous: proxies disagree on which wins.
		return "", fmt.Errorf("%w: %w (%d)", ErrInvalidToken, errSeveralHeaders, len(vals))
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") { // RFC 9110: schemes are case-insensitive
		return "", fmt.Errorf("%w: %w", ErrNoToken, errNotBearer)
	}
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", fmt.Errorf("%w: %w", ErrNoToken, errEmptyToken)
	}
	return tok, nil
}
