package admission

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// fingerprintBusyRetryAfter is the Retry-After of a 503 for want of
// fingerprint budget: a burst of bodies drains in well under a second.
const fingerprintBusyRetryAfter = time.Second

// unsupportedMediaType answers 415: a body of another media type than the
// endpoint declares. Nothing was claimed.
func unsupportedMediaType(c *exchange.Request) {
	// RFC 9110 15.5.16 asks to say what would have been accepted.
	accept, detail := "application/json", "this endpoint takes a JSON body with Content-Type application/json (curl --json)"
	if c.Endpoint.DeclaredBody() == config.BodyMultipart {
		accept, detail = "multipart/form-data", "this endpoint takes a multipart/form-data body with a boundary (curl -F)"
	}
	switch c.R.Method {
	case http.MethodPost:
		c.W.Header().Set("Accept-Post", accept)
	case http.MethodPatch:
		c.W.Header().Set("Accept-Patch", accept)
	}
	c.Refuse("unsupported_media_type", exchange.Problem{Type: "unsupported-media-type",
		Title:  "request body is not of the endpoint's media type",
		Detail: detail,
		Status: http.StatusUnsupportedMediaType, NewKeySafe: true})
}

// contentEncoding returns the request's Content-Encoding when it is one a
// JSON or multipart endpoint cannot take: the fingerprint parses the body,
// so a compressed one would be refused as malformed (or, re-compressed by
// a retry, be another request). Empty when the body is empty, identity, or
// the endpoint takes any bytes.
func contentEncoding(r *http.Request, ep *config.Endpoint, n int) string {
	if n == 0 || (ep.DeclaredBody() != config.BodyJSON && ep.DeclaredBody() != config.BodyMultipart) {
		return ""
	}
	enc := strings.TrimSpace(strings.Join(r.Header.Values("Content-Encoding"), ","))
	if enc == "" || strings.EqualFold(enc, "identity") {
		return ""
	}
	return enc
}

// unsupportedEncoding answers 415 to a compressed body (RFC 7694: with
// Accept-Encoding naming what is taken): nothing was claimed or run.
func unsupportedEncoding(c *exchange.Request, enc string) {
	c.W.Header().Set("Accept-Encoding", "identity")
	if len(enc) > 32 {
		enc = enc[:32] + "..."
	}
	c.Refuse("unsupported_media_type", exchange.Problem{Type: "unsupported-media-type",
		Title: "request body is not of the endpoint's media type",
		Detail: fmt.Sprintf("this endpoint fingerprints the body as sent and takes it uncompressed: "+
			"Content-Encoding %q is not accepted; send the body without Content-Encoding", enc),
		Status: http.StatusUnsupportedMediaType, NewKeySafe: true})
}

// fingerprintBusy answers 503: the fingerprint budget could not be had in
// time. Nothing was claimed; a retry with the same key is the way on (a new
// key is not safe: an earlier attempt under this key may have run).
func fingerprintBusy(c *exchange.Request) {
	c.RefuseWait("fingerprint_busy", exchange.Problem{Type: "overloaded", Title: "too many request bodies being checked",
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
