package authn

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
)

// suspendedFor returns what time.Now would have read at t had the host been
// suspended for d just before (a paused or migrated VM, a laptop's sleep):
// the wall clock d later, the monotonic clock (CLOCK_MONOTONIC stops
// during a suspend) where it was. Go has no API that builds such a reading,
// so it edits the wall seconds of time.Time's representation; the caller
// checks that the result is what it says.
func suspendedFor(t *testing.T, now time.Time, d time.Duration) time.Time {
	t.Helper()
	type rep struct {
		wall uint64 // hasMonotonic, 33 bits of seconds since 1885, 30 bits of nanoseconds
		ext  int64  // the monotonic reading
		loc  *time.Location
	}
	const hasMonotonic = 1 << 63
	r := *(*rep)(unsafe.Pointer(&now))
	if r.wall&hasMonotonic == 0 {
		t.Fatal("time.Now carries no monotonic reading")
	}
	r.wall += uint64(d/time.Second) << 30
	out := *(*time.Time)(unsafe.Pointer(&r))
	if out.Sub(now) != 0 || out.Round(0).Sub(now.Round(0)) != d.Truncate(time.Second) {
		t.Fatalf("time.Time's layout changed: cannot simulate a suspend (%s monotonic, %s wall)",
			out.Sub(now), out.Round(0).Sub(now.Round(0)))
	}
	return out
}

// TestACachedTokenIsRefusedOnceTheWallClockPassesItsExpiry: the verifier
// checks exp against the wall clock. A token remembered while valid is
// refused as soon as the wall clock is past its exp plus the leeway, even
// when the monotonic clock has not moved that far (the host was suspended
// in between): the cache's bounds are on the same clock as the check.
func TestACachedTokenIsRefusedOnceTheWallClockPassesItsExpiry(t *testing.T) {
	k := newTestKeys(t)
	start := time.Now()
	v, clk := cachingVerifier(t, k, nil) // leeway 30s, max age 1m
	clk.set(start)
	tok := sign(t, jwt.SigningMethodHS256, k.secret, "", func(c jwt.MapClaims) {
		c["iat"] = start.Add(-time.Minute).Unix()
		c["exp"] = start.Add(5 * time.Minute).Unix()
	})
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	if _, err := v.VerifyToken(tok); err != nil || v.cache.len() != 1 {
		t.Fatalf("repeat: %v, %d cached", err, v.cache.len())
	}
	clk.set(suspendedFor(t, start, 10*time.Minute))
	if _, err := v.VerifyToken(tok); !errors.Is(err, jwt.ErrTokenExpired) {
		t.Fatalf("after a 10 minute suspend, exp 5 minutes after the check: err = %v, want %v", err, jwt.ErrTokenExpired)
	}
}

// TestACachedTokenIsCheckedAgainWhenTheWallClockStepsBack: a wall clock
// stepped back before the check (NTP correcting a clock that ran ahead)
// makes the entry unusable although the monotonic clock moved on: the
// token is checked again, and one issued after the new time is refused.
func TestACachedTokenIsCheckedAgainWhenTheWallClockStepsBack(t *testing.T) {
	k := newTestKeys(t)
	start := time.Now()
	v, clk := cachingVerifier(t, k, nil)
	clk.set(start)
	tok := sign(t, jwt.SigningMethodHS256, k.secret, "", func(c jwt.MapClaims) {
		c["iat"] = start.Unix()
		c["exp"] = start.Add(time.Hour).Unix()
	})
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	clk.set(suspendedFor(t, start.Add(time.Second), -10*time.Minute))
	if _, err := v.VerifyToken(tok); !errors.Is(err, jwt.ErrTokenUsedBeforeIssued) {
		t.Fatalf("wall clock stepped 10 minutes back: err = %v, want %v", err, jwt.ErrTokenUsedBeforeIssued)
	}
}
