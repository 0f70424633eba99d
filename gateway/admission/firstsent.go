package admission

import (
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// HeaderFirstSent is the request header in which a client says when it
// first sent the intent (an RFC 9110 HTTP-date, like Azure's
// Repeatability-First-Sent), the same on every retry of it.
const HeaderFirstSent = "Idempotency-First-Sent"

// firstSentSkew is how far in the future a first-sent time may be: client
// clocks run a little ahead; a minute covers NTP-synchronised ones with
// room, and a date further ahead is a client bug that would keep the key
// alive past its retention. An endpoint whose ttl is under two of it
// tolerates half its ttl (firstSentWindow).
const firstSentSkew = time.Minute

// firstSentWindow is how long after its first-sent time a request is
// still accepted, and how far ahead of this server's clock that time may
// be (skew), for an endpoint that keeps keys for ttl.
//
// The window must end before the first attempt's record may be gone.
// That record was claimed when the guard accepted the first attempt, so
// no earlier than first-sent minus skew (a client ahead by up to skew),
// and it lives at least claim + lease + ttl (the store's expires_at only
// ever moves later). The window is therefore ttl minus skew: a first-sent
// time the guard accepts was claimed, if at all, at least skew before the
// window began, and its record outlives the window by the lease at least.
// The client's clock is not trusted to be right, only to be within skew
// ahead; a client behind gets a window shorter by its lag than its record's
// life, never longer.
//
// ttl is the endpoint's now. A record made under an earlier, shorter ttl
// outlives a window of the current one only if the ttl was not raised
// since: raising an endpoint's ttl widens the guard at once, while records
// claimed before it keep their shorter life (docs/http-contract.md says so).
func firstSentWindow(ttl time.Duration) (window, skew time.Duration) {
	skew = min(firstSentSkew, ttl/2)
	return ttl - skew, skew
}

// firstSent reads the call's Idempotency-First-Sent, zero when absent. A
// time older than the endpoint's first-sent window (its ttl less the skew
// tolerated), or further ahead than that skew, is refused (the caller
// answers 412 and runs nothing): the key's record may have been forgotten,
// so running the intent again could be its second run. A value that is no
// HTTP-date is refused (400). bad reports a refusal, which refused
// describes.
func (a *Stage) firstSent(c *exchange.Request) (t time.Time, refused exchange.Problem, bad bool) {
	values := c.R.Header.Values(HeaderFirstSent)
	if len(values) == 0 {
		return time.Time{}, exchange.Problem{}, false
	}
	t, err := parseFirstSent(values)
	if err != nil {
		return time.Time{}, exchange.Problem{Type: "invalid-first-sent", Title: "invalid Idempotency-First-Sent",
			Detail: exchange.Reason(err, "Idempotency-First-Sent does not parse"), Status: http.StatusBadRequest, NewKeySafe: true}, true
	}
	now := a.clock.Now()
	window, skew := firstSentWindow(c.Policy.TTL)
	switch {
	case t.Before(now.Add(-window)):
		return t, exchange.Problem{Type: "first-sent-expired", Title: "intent first sent before the key's retention",
			Detail: fmt.Sprintf("Idempotency-First-Sent is more than %s old, this endpoint's retention of keys (%s) less the %s of clock skew it tolerates: "+
				"its record may be gone, so it is not run again; find out whether it took effect before sending it anew",
				config.FormatDuration(window), config.FormatDuration(c.Policy.TTL), config.FormatDuration(skew)),
			Status: http.StatusPreconditionFailed}, true
	case t.After(now.Add(skew)):
		return t, exchange.Problem{Type: "first-sent-in-future", Title: "intent first sent in the future",
			Detail: fmt.Sprintf("Idempotency-First-Sent is more than %s ahead of this server's clock; "+
				"send the time of the first attempt, unchanged on every retry", config.FormatDuration(skew)),
			Status: http.StatusPreconditionFailed}, true
	}
	return t, exchange.Problem{}, false
}

// parseFirstSent parses the header's one value as an HTTP-date (IMF-fixdate,
// or the obsolete forms RFC 9110 asks recipients to accept).
func parseFirstSent(values []string) (time.Time, error) {
	if len(values) > 1 {
		return time.Time{}, exchange.NewInvalid("more than one Idempotency-First-Sent header")
	}
	t, err := http.ParseTime(values[0])
	if err != nil {
		return time.Time{}, exchange.NewInvalid("Idempotency-First-Sent is not an HTTP-date (Tue, 01 Dec 2026 11:00:00 GMT)")
	}
	return t.UTC(), nil
}

// Mismatch is the 422 for a key reused with another request than req (c's
// body's changed members named when rec kept digests). The
// operation exists: its id and state say which one the key belongs to
// (GET /v1/operations/{id} shows it to the same actor).
func Mismatch(c *exchange.Request, req store.ClaimRequest, rec store.Record) exchange.Problem {
	same := sameRequest(req, rec)
	return exchange.Problem{Type: "fingerprint-mismatch",
		Title:  "Idempotency-Key reused with a different request",
		Detail: mismatchDetail(rec, req.FirstSent, same), Status: http.StatusUnprocessableEntity,
		OperationID: rec.OperationID.String(), OperationState: string(rec.State),
		NewKeySafe: !same || tookNoEffect(rec.State), ChangedMembers: changedMembers(c, rec)} // members.go
}

// mismatchDetail is the 422's detail. A stored and a sent first-sent time
// that differ make the request another one whatever its body, and a client
// that changed the header (a retry that sent its own time, not the first
// attempt's) is told so; same says the body is the stored request's, whose
// operation a new key could run a second time.
func mismatchDetail(rec store.Record, sent time.Time, same bool) string {
	stored := rec.FirstSent
	if stored.IsZero() || sent.IsZero() || stored.Equal(sent) {
		return "this key belongs to another request; use a new key for a new intent"
	}
	d := fmt.Sprintf("this key belongs to a request first sent at %s, and this one says %s "+
		"(Idempotency-First-Sent): a retry sends the first attempt's time unchanged",
		stored.UTC().Format(http.TimeFormat), sent.UTC().Format(http.TimeFormat))
	if same && !tookNoEffect(rec.State) {
		return d + "; it is otherwise the same request, whose operation ran or may have run: " +
			"sending it under a new key could run it twice"
	}
	return d + "; use a new key for a new intent"
}

// sameRequest reports whether req is the request rec stored but for its
// first-sent time: the same fingerprint, recomputed at rec's version when
// rec was stored under another one. A fingerprint that cannot be
// recomputed counts as the same request (the safe side: no new key is
// advised).
func sameRequest(req store.ClaimRequest, rec store.Record) bool {
	want := req.Fingerprint
	if rec.Fingerprint.Version != want.Version {
		if req.Refingerprint == nil {
			return true
		}
		var err error
		if want, err = req.Refingerprint(rec.Fingerprint.Version); err != nil {
			return true
		}
	}
	return rec.Fingerprint.Equal(want)
}

// tookNoEffect reports whether an operation in state s is known not to
// have taken effect: a retryable failure (recorded as having taken none)
// or a cancellation (the upstream confirmed it never takes effect). Any
// other state ran, is running, or may have run.
func tookNoEffect(s idempotency.State) bool {
	return s == idempotency.RetryableFailure || s == idempotency.Cancelled
}
