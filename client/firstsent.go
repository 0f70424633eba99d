package client

import (
	"net/http"
	"sync"
	"time"
)

// HeaderFirstSent carries when the intent was first sent, an RFC 9110
// HTTP-date. Do sets it to the time of its first attempt on every keyed
// intent and sends the same value on each retry, so the server can refuse
// (412 first-sent-expired) a retry older than its retention of keys, whose
// record may be gone, instead of running the intent a second time.
//
// The server treats the same key with another first-sent time as another
// request (422), so the value must never change for one intent. A Client
// remembers the value it sent for each of its last firstSentMemoSize keys
// (per method and path), and a later Do of the same key sends it again.
// To retry an intent beyond that (another Client, or after a restart),
// pass the first call's value in Intent.Header: Do keeps a value it is
// given.
const HeaderFirstSent = "Idempotency-First-Sent"

// firstSentMemoSize is how many keys a Client remembers the first-sent
// time of: a retry with the same key in a later Do call sends the time the
// first call stamped. At about 100 bytes an entry this is a few MiB at
// most; the oldest entries are forgotten first.
const firstSentMemoSize = 1 << 15

// firstSentMemo remembers, per intent (method, path, key), the first-sent
// value a Client stamped, so that a retry in a later Do call is the same
// request to the server. Bounded: the oldest entry goes first.
type firstSentMemo struct {
	mu    sync.Mutex
	sent  map[string]string
	order []string // ring of keys in stamping order
	next  int
}

// stamp sets HeaderFirstSent on h: the value h already carries (kept and
// remembered), else the one remembered for the intent, else now.
func (m *firstSentMemo) stamp(h http.Header, intent string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sent == nil {
		m.sent = make(map[string]string)
		m.order = make([]string, firstSentMemoSize)
	}
	v := h.Get(HeaderFirstSent)
	if v == "" {
		if v = m.sent[intent]; v == "" {
			v = now.UTC().Format(http.TimeFormat)
		}
		h.Set(HeaderFirstSent, v)
	}
	if _, known := m.sent[intent]; !known {
		if old := m.order[m.next]; old != "" {
			delete(m.sent, old)
		}
		m.order[m.next] = intent
		m.next = (m.next + 1) % len(m.order)
	}
	m.sent[intent] = v
}
