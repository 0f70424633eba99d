package exchange

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
)

// hopHeaders are connection-level headers a proxy must not forward.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// isHopHeader reports whether name is one of hopHeaders.
func isHopHeader(name string) bool { return slices.Contains(hopHeaders, name) }

// OutboundHeader is h without its hop-by-hop headers (as h.Clone() with
// each hop-by-hop header deleted), with room for extra more. The values
// are h's, capped: the copy never appends into h's. Both the upstream
// call and a forward to the owner region send it.
func OutboundHeader(h http.Header, extra int) http.Header {
	out := make(http.Header, len(h)+extra)
	for name, vs := range h {
		if !isHopHeader(name) {
			out[name] = vs[:len(vs):len(vs)]
		}
	}
	return out
}

// DropHopHeaders deletes h's hop-by-hop headers (as h.Del of each does).
func DropHopHeaders(h http.Header) {
	for name := range h {
		if isHopHeader(name) {
			delete(h, name)
		}
	}
}

// Redact keeps an upstream error loggable: a *url.Error carries the full
// URL, query string included, which may hold what the client sent.
func Redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
