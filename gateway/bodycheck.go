package gateway

import (
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
)

// fingerprintBusyRetryAfter is the Retry-After of a 503 for want of
// fingerprint budget: a burst of bodies drains in well under a second.
const fingerprintBusyRetryAfter = time.Second

// unsupportedMediaType answers 415: a body of another media type than the
// endpoint declares. Nothing was claimed.
func (g *Gateway) unsupportedMediaType(c *call) {
	// RFC 9110 15.5.16 asks to say what would have been accepted.
	accept, detail := "application/json", "this endpoint takes a JSON body with Content-Type application/json (curl --json)"
	if c.ep.DeclaredBody() == config.BodyMultipart {
		accept, detail = "multipart/form-data", "this endpoint takes a multipart/form-data body with a boundary (curl -F)"
	}
	switch c.r.Method {
	case http.MethodPost:
		c.w.Header().Set("Accept-Post", accept)
	case http.MethodPatch:
		c.w.Header().Set("Accept-Patch", accept)
	}
	g.refuse(c, "unsupported_media_type", problem{Type: "unsupported-media-type",
		Title:  "request body is not of the endpoint's media type",
		Detail: detail,
		Status: http.StatusUnsupportedMediaType, NewKeySafe: true})
}

// fingerprintBusy answers 503: the fingerprint budget could not be had in
// time. Nothing was claimed; a retry with the same key is the way on (a new
// key is not safe: an earlier attempt under this key may have run).
func (g *Gateway) fingerprintBusy(c *call) {
	g.refuseWait(c, "fingerprint_busy", problem{Type: "overloaded", Title: "too many request bodies being checked",
		Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable},
		fingerprintBusyRetryAfter)
}

// bodyCapDetail states the cap a 413 enforced, in the unit of the endpoint's
// max_request_bytes and in bytes: the client needs the number to split its
// request, and the operator's name for the setting to raise it.
func bodyCapDetail(limit int64) string {
	return fmt.Sprintf("the request body is larger than the endpoint's max_request_bytes of %s (%d bytes); nothing was executed",
		config.ByteSize(limit), limit)
}
