package authn

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// Limits and defaults of Config.
const (
	// DefaultLeeway is the clock skew tolerated when checking exp, nbf and
	// iat. Issuer and idemd hosts run NTP, which keeps them within
	// milliseconds, but a VM resumed after a pause or live migration can be
	// seconds off until it resyncs; 30 seconds absorbs that while letting an
	// expired token live at most 30 seconds longer.
	DefaultLeeway = 30 * time.Second
	// MaxLeeway caps Leeway: a larger tolerance mostly extends the life of
	// leaked tokens rather than fixing clocks.
	MaxLeeway = 5 * time.Minute
	// MinSecretBytes is the shortest HS256 secret accepted: RFC 7518 section
	// 3.2 requires a key at least as long as the hash output (256 bits).
	MinSecretBytes = 32
	// DefaultCacheMaxAge is how long a verified token's principal is reused
	// for the same token at most. A client sends one token on every request
	// until it expires, and checking it again on each was about a tenth of
	// the gateway's Go CPU per request; a minute makes that negligible while
	// the check is still made anew at least every minute.
	DefaultCacheMaxAge = time.Minute
	// MaxCacheMaxAge caps CacheMaxAge: the cache saves little more past a
	// few minutes.
	MaxCacheMaxAge = 10 * time.Minute
	// DefaultCacheEntries bounds the tokens remembered at once: about a
	// hundred bytes each, a few MB at most, more distinct tokens than the
	// clients of an instance use within a minute.
	DefaultCacheEntries = 10000
)

// Config says which tokens a Verifier accepts. At least one key source
// (HS256Secret or PublicKeyFiles) is required; both may be set, for example
// while moving from a shared secret to an identity provider.
type Config struct {
	// Issuer is the required value of the "iss" claim.
	Issuer string
	// Audience must be one of the values of the "aud" claim.
	Audience string
	// HS256Secret is the shared HMAC secret; when set, HS256 tokens are
	// accepted and verified with it only. At least MinSecretBytes long.
	HS256Secret []byte
	// PublicKeyFiles are PEM files each holding one public key (PUBLIC KEY,
	// RSA PUBLIC KEY or CERTIFICATE block): an RSA key (2048 bits or more)
	// enables RS256, an EC P-256 key ES256. A file's name without its
	// extension is the key's "kid" ("keys/2025-06.pem" is "2025-06"). Several
	// files of one kind allow key rotation.
	PublicKeyFiles []string
	// Leeway is the clock skew tolerated on exp, nbf and iat. 0 means
	// DefaultLeeway; at most MaxLeeway. Larger tolerates worse clocks and
	// lets expired tokens live longer.
	Leeway time.Duration
	// CacheMaxAge is how long a token that verified is remembered, so that
	// the same token (byte for byte) sent again skips the signature and
	// claims check. An entry is never used past the token's exp plus
	// Leeway, nor after the clock stepped back before the check; a token
	// that failed is never remembered. 0 means DefaultCacheMaxAge; at most
	// MaxCacheMaxAge; negative turns the cache off. Longer saves a little
	// more CPU; shorter re-checks sooner.
	CacheMaxAge time.Duration
	// CacheEntries bounds the tokens remembered at once (see CacheMaxAge);
	// 0 means DefaultCacheEntries. When full, expired entries and then
	// arbitrary ones make room, and an evicted token is checked again.
	CacheEntries int
	// Clock tells the time exp, nbf and iat are checked against; nil
	// means clock.Real(). Tests inject a *clock.Fake instead of waiting
	// for tokens to expire.
	Clock clock.Clock
}

// DefaultConfig returns a Config with every default set; Issuer,
// Audience and a key source are left to set.
func DefaultConfig() Config {
	return Config{Leeway: DefaultLeeway, CacheMaxAge: DefaultCacheMaxAge, CacheEntries: DefaultCacheEntries,
		Clock: clock.Real()}
}

// Validate reports every invalid field, naming it and saying why. It does no
// I/O: whether the key files exist and parse is checked by NewVerifier.
func (c Config) Validate() error {
	var errs []error
	if c.Issuer == "" {
		errs = append(errs, errors.New("issuer: required"))
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("audience: required"))
	}
	if len(c.HS256Secret) == 0 && len(c.PublicKeyFiles) == 0 {
		errs = append(errs, errors.New("one of hs256_secret, public_key_files is required"))
	}
	if n := len(c.HS256Secret); n > 0 && n < MinSecretBytes {
		errs = append(errs, fmt.Errorf("hs256_secret: %d bytes, at least %d are required", n, MinSecretBytes))
	}
	for i, f := range c.PublicKeyFiles {
		if f == "" {
			errs = append(errs, fmt.Errorf("public_key_files[%d]: empty path", i))
		}
	}
	if c.Leeway < 0 || c.Leeway > MaxLeeway {
		errs = append(errs, fmt.Errorf("leeway: must be within 0 and %s, got %s", MaxLeeway, c.Leeway))
	}
	if c.CacheMaxAge > MaxCacheMaxAge {
		errs = append(errs, fmt.Errorf("cache_max_age: at most %s (negative turns the cache off), got %s", MaxCacheMaxAge, c.CacheMaxAge))
	}
	if c.CacheEntries < 0 {
		errs = append(errs, fmt.Errorf("cache_entries: must not be negative (0 means %d), got %d", DefaultCacheEntries, c.CacheEntries))
	}
	return errors.Join(errs...)
}

// leeway returns Leeway with its default applied.
func (c Config) leeway() time.Duration {
	if c.Leeway == 0 {
		return DefaultLeeway
	}
	return c.Leeway
}

// cache returns the verified-token cache of the config, nil when it is
// off.
func (c Config) cache() *tokenCache {
	maxAge, entries := c.CacheMaxAge, c.CacheEntries
	if maxAge < 0 {
		return nil
	}
	if maxAge == 0 {
		maxAge = DefaultCacheMaxAge
	}
	if entries == 0 {
		entries = DefaultCacheEntries
	}
	return newTokenCache(maxAge, entries)
}
