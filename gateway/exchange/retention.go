package exchange

import (
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// HeaderKeyExpires is the response header that says until when the key of
// a coordinated answer is honoured: an RFC 9110 HTTP-date (IMF-fixdate,
// whole seconds, rounded down) taken from the record's expires_at. A retry
// with the key up to that instant gets the same outcome; after it the
// record may have been swept, and the key may run as a new request.
const HeaderKeyExpires = "Idempotency-Key-Expires"

// AdvertiseRetention sets HeaderKeyExpires from rec, the record the claim
// decided on. On a replay or a refusal it is the record's expires_at. On a
// first run or a takeover it is the expires_at the claim read or set;
// recording the result only ever moves expires_at later (GREATEST in the
// store's finish), so the date is a promise the gateway keeps.
func AdvertiseRetention(w http.ResponseWriter, rec store.Record) {
	advertiseExpiry(w, rec.ExpiresAt)
}

// AdvertiseClaim sets HeaderKeyExpires for the answer to a claim: the
// expires_at the claim's own write set when it holds a lease (a first run,
// or a takeover, which extends the record it read: a RETRYABLE_FAILURE
// retried after its expires_at would otherwise advertise a date already
// past), else the record's as the claim saw it.
func AdvertiseClaim(w http.ResponseWriter, claim store.Claim) {
	if claim.Lease != nil && !claim.Lease.RecordExpiresAt.IsZero() {
		advertiseExpiry(w, claim.Lease.RecordExpiresAt)
		return
	}
	AdvertiseRetention(w, claim.Record)
}

func advertiseExpiry(w http.ResponseWriter, at time.Time) {
	if at.IsZero() {
		return
	}
	w.Header().Set(HeaderKeyExpires, at.UTC().Format(http.TimeFormat))
}
