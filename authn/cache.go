package authn

import (
	"crypto/sha256"
	"sync"
	"time"
	"unsafe"
)

// tokenCache remembers the principal of tokens that verified, so a client
// that sends the same token on every request (all of them do, until it
// expires) pays the signature and claims check once per CacheMaxAge instead
// of on every request: the check, a base64 and JSON pass and an HMAC or RSA
// verification, was about a tenth of the gateway's Go CPU per first run
// (docs/capacity.md, "The gateway").
//
// An entry is keyed by the SHA-256 of the exact token bytes, so only a
// byte-identical token hits, and the token itself is not kept. Only
// successful verifications are remembered: a refused token is checked again
// every time. An entry is used only while every time-dependent check the
// verifier made would still pass (before exp plus the leeway, and never
// before the time it was made, should the clock step back) and for at most
// maxAge. Keys cannot change under a Verifier (rotation builds a new one, with
// an empty cache), and nothing else the check depends on changes with time.
type tokenCache struct {
	maxAge  time.Duration
	entries int

	mu sync.RWMutex
	m  map[[sha256.Size]byte]cachedToken
}

// cachedToken is one remembered verification.
type cachedToken struct {
	p Principal
	// at is when the token was verified; until is when the entry stops
	// being used: min(exp + leeway, at + maxAge).
	at, until time.Time
}

func newTokenCache(maxAge time.Duration, entries int) *tokenCache {
	return &tokenCache{maxAge: maxAge, entries: entries, m: make(map[[sha256.Size]byte]cachedToken)}
}

// get returns the principal of raw if it verified no longer than the
// cache's bounds ago, as of now.
func (c *tokenCache) get(raw string, now time.Time) (Principal, bool) {
	now = now.Round(0) // the wall clock, as the check reads exp, nbf and iat
	k := tokenKey(raw)
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || now.Before(e.at) || !now.Before(e.until) {
		return Principal{}, false
	}
	return e.p, true
}

// tokenKey is the cache's key of raw: the SHA-256 of its bytes, hashed in
// place (a token is a few hundred bytes, and a copy of it per request
// would be the cached path's largest allocation).
func tokenKey(raw string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(raw), len(raw))) // read, never written
}

// put remembers that raw verified as p at now, until expires (the token's
// exp plus the leeway) or maxAge, whichever comes first.
func (c *tokenCache) put(raw string, p Principal, now, expires time.Time) {
	// Every bound on the wall clock: with time.Now's monotonic reading,
	// comparisons would ignore a step of the wall clock (a suspended host
	// resumed, NTP stepping it back) that the check itself would see.
	now = now.Round(0)
	until := now.Add(c.maxAge)
	if expires.Before(until) {
		until = expires
	}
	if !now.Before(until) {
		return
	}
	k := tokenKey(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.entries {
		c.evict(now)
	}
	c.m[k] = cachedToken{p: p, at: now, until: until}
}

// evict makes room: every entry past its end goes, and if that frees too
// little, arbitrary entries (Go's map order) until an eighth of the cache is
// free, so a full cache pays for this once per entries/8 new tokens. An
// evicted token is verified again on its next use.
func (c *tokenCache) evict(now time.Time) {
	for k, e := range c.m {
		if !now.Before(e.until) || now.Before(e.at) {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) < c.entries-c.entries/8 {
			break
		}
		delete(c.m, k)
	}
}

// len is the number of entries held (tests).
func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
