package authn

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idemcoord/idemcoord/clock"
)

// steppingClock is a clock tests may set anywhere, backwards too (a
// clock.Fake never moves back). Only Now is used by a Verifier.
type steppingClock struct {
	clock.Clock
	mu  sync.Mutex
	now time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppingClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// cachingVerifier is a verifier of testConfig(k) with the cache at its
// defaults, on a clock the test sets.
func cachingVerifier(t *testing.T, k *testKeys, edit func(*Config)) (*Verifier, *steppingClock) {
	t.Helper()
	clk := &steppingClock{now: testNow}
	cfg := testConfig(k)
	cfg.Clock = clk
	if edit != nil {
		edit(&cfg)
	}
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v, clk
}

// TestACachedTokenIsRefusedOnceItExpires: a token remembered as verified is
// accepted up to its exp plus the leeway, exactly as without the cache, and
// refused from then on although the cache's max age has not run out.
func TestACachedTokenIsRefusedOnceItExpires(t *testing.T) {
	k := newTestKeys(t)
	v, clk := cachingVerifier(t, k, nil) // leeway 30s, max age 1m
	exp := testNow.Add(20 * time.Second)
	tok := sign(t, jwt.SigningMethodHS256, k.secret, "", func(c jwt.MapClaims) { c["exp"] = exp.Unix() })
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	if v.cache.len() != 1 {
		t.Fatalf("cache holds %d tokens after a success, want 1", v.cache.len())
	}
	clk.set(exp.Add(DefaultLeeway - time.Second))
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatalf("within the leeway: %v", err)
	}
	clk.set(exp.Add(DefaultLeeway))
	if _, err := v.VerifyToken(tok); !errors.Is(err, jwt.ErrTokenExpired) {
		t.Fatalf("at exp + leeway, within the cache's max age: err = %v, want %v", err, jwt.ErrTokenExpired)
	}
}

// TestATokenFromARotatedOutKeyIsRefusedEvenWhenCached: key rotation builds
// a new Verifier from the new key files (idemd reads them at start); a
// token the old one verified and remembered, signed by the key rotated
// out, is refused by the new one at once, not once the cache entry ends.
func TestATokenFromARotatedOutKeyIsRefusedEvenWhenCached(t *testing.T) {
	k := newTestKeys(t)
	old, _ := cachingVerifier(t, k, func(c *Config) { c.HS256Secret, c.PublicKeyFiles = nil, []string{k.rsaFile} })
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", nil)
	if _, err := old.VerifyToken(tok); err != nil {
		t.Fatalf("token of the current key: %v", err)
	}
	if _, err := old.VerifyToken(tok); err != nil || old.cache.len() != 1 {
		t.Fatalf("cached token: err %v, %d cached", err, old.cache.len())
	}
	newFile, _ := writePublicPEM(t, t.TempDir(), "rsa-2.pem", &k.rsaRogue.PublicKey)
	rotated, _ := cachingVerifier(t, k, func(c *Config) { c.HS256Secret, c.PublicKeyFiles = nil, []string{newFile} })
	if _, err := rotated.VerifyToken(tok); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		t.Fatalf("token of the rotated-out key after rotation: err = %v, want %v", err, jwt.ErrTokenSignatureInvalid)
	}
	if _, err := rotated.VerifyToken(sign(t, jwt.SigningMethodRS256, k.rsaRogue, "rsa-2", nil)); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
}

// TestAFailedVerificationIsNeverCached: a refused token stays refused and
// is not remembered, and a token that only shares a verified token's
// claims (another signature) gets nothing from the verified one's entry.
func TestAFailedVerificationIsNeverCached(t *testing.T) {
	k := newTestKeys(t)
	v, clk := cachingVerifier(t, k, nil)
	good := sign(t, jwt.SigningMethodHS256, k.secret, "", nil)
	if _, err := v.VerifyToken(good); err != nil {
		t.Fatal(err)
	}
	forged := good[:strings.LastIndexByte(good, '.')+1] + sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("f", 32)), "", nil)[strings.LastIndexByte(good, '.')+1:]
	for range 2 {
		if _, err := v.VerifyToken(forged); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			t.Fatalf("same claims, another signature: err = %v, want %v", err, jwt.ErrTokenSignatureInvalid)
		}
	}
	early := sign(t, jwt.SigningMethodHS256, k.secret, "", func(c jwt.MapClaims) { c["nbf"] = testNow.Add(time.Minute).Unix() })
	if _, err := v.VerifyToken(early); !errors.Is(err, jwt.ErrTokenNotValidYet) {
		t.Fatalf("not yet valid: err = %v", err)
	}
	if n := v.cache.len(); n != 1 {
		t.Fatalf("cache holds %d tokens, want only the one that verified", n)
	}
	clk.set(testNow.Add(time.Minute))
	if _, err := v.VerifyToken(early); err != nil {
		t.Fatalf("the refused token once valid: %v (a refusal was remembered)", err)
	}
}

// TestACachedTokenIsCheckedAgainWhenTheClockStepsBack: an entry is not
// used at a time before its check (a clock stepped back by NTP or a
// restored VM), where the token may not be valid yet: it is checked again.
func TestACachedTokenIsCheckedAgainWhenTheClockStepsBack(t *testing.T) {
	k := newTestKeys(t)
	v, clk := cachingVerifier(t, k, nil)
	tok := sign(t, jwt.SigningMethodHS256, k.secret, "", func(c jwt.MapClaims) { c["iat"] = testNow.Unix() })
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatal(err)
	}
	clk.set(testNow.Add(-DefaultLeeway - time.Second))
	if _, err := v.VerifyToken(tok); !errors.Is(err, jwt.ErrTokenUsedBeforeIssued) {
		t.Fatalf("clock stepped back before iat - leeway: err = %v, want %v", err, jwt.ErrTokenUsedBeforeIssued)
	}
}

// TestACachedTokenIsUsedForAtMostTheMaxAge: however long the token lives,
// its entry is used for CacheMaxAge at most; then the token is checked
// again.
func TestACachedTokenIsUsedForAtMostTheMaxAge(t *testing.T) {
	c := newTokenCache(time.Minute, 8)
	p := Principal{Tenant: "acme", Subject: "alice"}
	c.put("tok", p, testNow, testNow.Add(time.Hour))
	if got, ok := c.get("tok", testNow.Add(time.Minute-time.Nanosecond)); !ok || got != p {
		t.Fatalf("within the max age: %v %v", got, ok)
	}
	if _, ok := c.get("tok", testNow.Add(time.Minute)); ok {
		t.Fatal("entry used at its max age")
	}
	if _, ok := c.get("tok2", testNow); ok {
		t.Fatal("another token hit")
	}
}

// TestTheTokenCacheStaysWithinItsEntries: many distinct tokens, verified
// concurrently, never grow the cache past CacheEntries, and each still
// verifies as its own principal.
func TestTheTokenCacheStaysWithinItsEntries(t *testing.T) {
	k := newTestKeys(t)
	const entries = 16
	v, _ := cachingVerifier(t, k, func(c *Config) { c.CacheEntries = entries })
	toks := make([]string, 100)
	for i := range toks {
		toks[i] = sign(t, jwt.SigningMethodHS256, k.secret, "", func(c jwt.MapClaims) { c["sub"] = fmt.Sprintf("user-%d", i) })
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for i, tok := range toks {
					p, err := v.VerifyToken(tok)
					if err != nil || p.Subject != fmt.Sprintf("user-%d", i) {
						t.Errorf("worker %d round %d token %d: %+v, %v", w, round, i, p, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if n := v.cache.len(); n > entries || n == 0 {
		t.Fatalf("cache holds %d tokens, want 1..%d", n, entries)
	}
}

// TestATokenCacheOffChecksEveryTime: a negative CacheMaxAge turns the cache
// off; tokens verify as before.
func TestATokenCacheOffChecksEveryTime(t *testing.T) {
	k := newTestKeys(t)
	v, _ := cachingVerifier(t, k, func(c *Config) { c.CacheMaxAge = -1 })
	if v.cache != nil {
		t.Fatal("cache on with a negative CacheMaxAge")
	}
	if _, err := v.VerifyToken(sign(t, jwt.SigningMethodHS256, k.secret, "", nil)); err != nil {
		t.Fatal(err)
	}
}

// TestARepeatedTokenSkipsTheJWTCheck: the cached path allocates next to
// nothing where the full check allocates dozens of objects (base64, JSON,
// claims): the cache is what answers a client's repeated token.
func TestARepeatedTokenSkipsTheJWTCheck(t *testing.T) {
	k := newTestKeys(t)
	v, _ := cachingVerifier(t, k, nil)
	off, _ := cachingVerifier(t, k, func(c *Config) { c.CacheMaxAge = -1 })
	tok := sign(t, jwt.SigningMethodHS256, k.secret, "", nil)
	verify := func(v *Verifier) func() {
		return func() {
			if _, err := v.VerifyToken(tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	full := testing.AllocsPerRun(50, verify(off))
	cached := testing.AllocsPerRun(50, verify(v))
	if full < 20 || cached > 2 {
		t.Fatalf("allocations per verification: %v uncached, %v cached; want the cached one at most 2", full, cached)
	}
}

// TestACachedTokenIsLookedUpWithoutACopy: the cached path hashes the
// token where it lies: no allocation at all per verification (a copy of
// the token was its largest).
func TestACachedTokenIsLookedUpWithoutACopy(t *testing.T) {
	k := newTestKeys(t)
	v, _ := cachingVerifier(t, k, nil)
	tok := sign(t, jwt.SigningMethodHS256, k.secret, "", nil)
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(50, func() {
		if _, err := v.VerifyToken(tok); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per cached verification, want 0", allocs)
	}
}
