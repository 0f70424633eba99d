package client

import (
	"net/http"
	"time"
)

// HeaderFirstSent carries when the intent was first sent, an RFC 9110
// HTTP-date. Do sets it to the time of its first attempt on every keyed
// intent and sends the same value on each retry, so the server can refuse
// (412 first-sent-expired) a retry older than its retention of keys, whose
// record may be gone, instead of running the intent a second time. To
// retry an intent across Do calls (after a restart, say), pass the first
// call's value in Intent.Header: Do keeps a value it is given.
const HeaderFirstSent = "Idempotency-First-Sent"

// stampFirstSent sets HeaderFirstSent to now, unless h carries one.
func stampFirstSent(h http.Header, now time.Time) {
	if h.Get(HeaderFirstSent) == "" {
		h.Set(HeaderFirstSent, now.UTC().Format(http.TimeFormat))
	}
}
