package exchange

import (
	"errors"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// contentionRetryAfter is the Retry-After of a 409 for a key the store gave
// up on under contention: the racers that beat this request finish within
// a few transactions, so a second is ample and still short for a person.
const contentionRetryAfter = time.Second

// StoreRetryAfter is the Retry-After of a 503 while the store is
// unreachable: long enough not to hammer a recovering database, short
// enough that a blip costs a client one second.
const StoreRetryAfter = time.Second

// Contended answers a store call that gave up because other writers on the
// same key kept winning (store.ErrContention): the store is healthy and the
// key is busy, which is a 409 like an operation in progress, not the 503 of
// a dead store. Nothing was executed by this request.
func (q *Request) Contended(err error) {
	SetKeyStatus(q.W, KeyStatusInProgress)
	q.Outcomes.Log.InfoContext(q.R.Context(), "store gave up under contention", "endpoint", q.Endpoint.Name, "key", q.Key, "err", err)
	q.RefuseWait("contention", Problem{Type: "in-progress", Title: "key is contended",
		Detail: "other requests with this key are being decided; nothing was executed; retry with the same key",
		Status: http.StatusConflict}, contentionRetryAfter)
}

// StoreDown answers 503: no claim was confirmed, so nothing was sent
// upstream. A claim whose commit the store could not confirm may exist;
// the store releases it once it answers again (docs/store.md), so a
// retry runs at once instead of waiting out its lease.
func (q *Request) StoreDown(err error) {
	if errors.Is(err, store.ErrContention) {
		q.Contended(err) // a busy key (409), not a dead store
		return
	}
	SetKeyStatus(q.W, KeyStatusRejected)
	if q.Outcomes.StoreDown != nil {
		q.Outcomes.StoreDown(q.Actor, q.Endpoint.Name, q.Key)
	}
	q.Outcomes.Log.WarnContext(q.R.Context(), "store unavailable", "endpoint", q.Endpoint.Name, "key", q.Key, "err", err)
	q.RefuseWait("store_unavailable", Problem{Type: "store-unavailable", Title: "idempotency store unavailable",
		Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, StoreRetryAfter)
}

// RegionUnavailable answers 503: another region owns the actor's shard.
func (q *Request) RegionUnavailable(err error) {
	q.Outcomes.Log.WarnContext(q.R.Context(), "region does not own the shard", "endpoint", q.Endpoint.Name, "err", err)
	q.RefuseWait("region_unavailable", Problem{Type: "region-unavailable",
		Title:  "this region does not own the actor now",
		Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, time.Second)
}
