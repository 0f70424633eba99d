package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
)

// HeaderFirstSent is the request header in which a client says when it
// first sent the intent (an RFC 9110 HTTP-date, like Azure's
// Repeatability-First-Sent), the same on every retry of it.
const HeaderFirstSent = "Idempotency-First-Sent"

// firstSentSkew is how far in the future a first-sent time may be: client
// clocks run a little ahead; a minute covers NTP-synchronised ones with
// room, and a date further ahead is a client bug that would keep the key
// alive past its retention.
const firstSentSkew = time.Minute

// firstSent reads the call's Idempotency-First-Sent, zero when absent. A
// time older than the endpoint's ttl, or further ahead than
// firstSentSkew, is refused (the caller answers 412 and runs nothing):
// the key's record may have been forgotten, so running the intent again
// could be its second run. A value that is no HTTP-date is refused (400).
// bad reports a refusal, which refused describes.
func (g *Gateway) firstSent(c *call) (t time.Time, refused problem, bad bool) {
	values := c.r.Header.Values(HeaderFirstSent)
	if len(values) == 0 {
		return time.Time{}, problem{}, false
	}
	t, err := parseFirstSent(values)
	if err != nil {
		return time.Time{}, problem{Type: "invalid-first-sent", Title: "invalid Idempotency-First-Sent",
			Detail: err.Error(), Status: http.StatusBadRequest, NewKeySafe: true}, true
	}
	now := g.clock.Now()
	switch {
	case t.Before(now.Add(-c.policy.TTL)):
		return t, problem{Type: "first-sent-expired", Title: "intent first sent before the key's retention",
			Detail: fmt.Sprintf("Idempotency-First-Sent is older than this endpoint's retention of keys (%s): "+
				"its record may be gone, so it is not run again; find out whether it took effect before sending it anew", config.FormatDuration(c.policy.TTL)),
			Status: http.StatusPreconditionFailed}, true
	case t.After(now.Add(firstSentSkew)):
		return t, problem{Type: "first-sent-in-future", Title: "intent first sent in the future",
			Detail: fmt.Sprintf("Idempotency-First-Sent is more than %s ahead of this server's clock; "+
				"send the time of the first attempt, unchanged on every retry", config.FormatDuration(firstSentSkew)),
			Status: http.StatusPreconditionFailed}, true
	}
	return t, problem{}, false
}

// parseFirstSent parses the header's one value as an HTTP-date (IMF-fixdate,
// or the obsolete forms RFC 9110 asks recipients to accept).
func parseFirstSent(values []string) (time.Time, error) {
	if len(values) > 1 {
		return time.Time{}, errors.New("more than one Idempotency-First-Sent header")
	}
	t, err := http.ParseTime(values[0])
	if err != nil {
		return time.Time{}, errors.New("Idempotency-First-Sent is not an HTTP-date (Tue, 01 Dec 2026 11:00:00 GMT)")
	}
	return t.UTC(), nil
}

// mismatchDetail is the 422's detail. A stored and a sent first-sent time
// that differ make the request another one whatever its body, and a client
// that changed the header (a retry that sent its own time, not the first
// attempt's) is told so.
func mismatchDetail(stored, sent time.Time) string {
	if !stored.IsZero() && !sent.IsZero() && !stored.Equal(sent) {
		return fmt.Sprintf("this key belongs to a request first sent at %s, and this one says %s "+
			"(Idempotency-First-Sent): a retry sends the first attempt's time unchanged; use a new key for a new intent",
			stored.UTC().Format(http.TimeFormat), sent.UTC().Format(http.TimeFormat))
	}
	return "this key belongs to another request; use a new key for a new intent"
}
