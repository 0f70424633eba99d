package gateway

import (
	"net/http"
	"time"
)

// contentionRetryAfter is the Retry-After of a 409 for a key the store gave
// up on under contention: the racers that beat this request finish within
// a few transactions, so a second is ample and still short for a person.
const contentionRetryAfter = time.Second

// contended answers a store call that gave up because other writers on the
// same key kept winning (store.ErrContention): the store is healthy and the
// key is busy, which is a 409 like an operation in progress, not the 503 of
// a dead store. Nothing was executed by this request.
func (g *Gateway) contended(c *call, err error) {
	setKeyStatus(c.w, KeyStatusInProgress)
	g.log.InfoContext(c.r.Context(), "store gave up under contention", "endpoint", c.ep.Name, "key", c.key, "err", err)
	g.refuseWait(c, "contention", problem{Type: "in-progress", Title: "key is contended",
		Detail: "other requests with this key are being decided; nothing was executed; retry with the same key",
		Status: http.StatusConflict}, contentionRetryAfter)
}
