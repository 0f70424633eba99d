package gateway

import (
	"net/http"

	"github.com/idemcoord/idemcoord/crdb"
)

// HeaderKeyExpires is the response header that says until when the key of
// a coordinated answer is honoured: an RFC 9110 HTTP-date (IMF-fixdate,
// whole seconds, rounded down) taken from the record's expires_at. A retry
// with the key up to that instant gets the same outcome; after it the
// record may have been swept, and the key may run as a new request.
const HeaderKeyExpires = "Idempotency-Key-Expires"

// advertiseRetention sets HeaderKeyExpires from rec, the record the claim
// decided on. On a replay or a refusal it is the record's expires_at. On a
// first run or a takeover it is the expires_at the claim read or set;
// recording the result only ever moves expires_at later (GREATEST in the
// store's finish), so the date is a promise the gateway keeps.
func advertiseRetention(w http.ResponseWriter, rec crdb.Record) {
	if rec.ExpiresAt.IsZero() {
		return
	}
	w.Header().Set(HeaderKeyExpires, rec.ExpiresAt.UTC().Format(http.TimeFormat))
}
