package upstream

import (
	"net/http"
	"net/url"
	"path"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// snapshot keeps what a replay needs: status, allow-listed headers, the
// body within the endpoint's cap, and the created resource's id (see
// resourceID).
func snapshot(p idempotency.Policy, a Answer) store.Snapshot {
	s := store.Snapshot{Status: a.Status, Header: http.Header{}}
	for name, vs := range a.Header {
		if p.KeepHeader(name) {
			s.Header[http.CanonicalHeaderKey(name)] = vs
		}
	}
	if int64(len(a.Body)) <= p.MaxResponseBytes {
		s.Body = a.Body
	} else {
		s.BodyOmitted = true
	}
	if loc := a.Header.Get("Location"); loc != "" {
		s.ResourceID = resourceID(loc)
	}
	return s
}

// resourceID is the created resource's id as a Location names it: the last
// segment of its path, escaped as sent, followed by "?" and its query
// string when it has one (/v1/things/t1?x=y is "t1?x=y"): the re-read of a
// reference replay asks for that same resource (referenceURL). A
// fragment is no part of it; a Location without a path segment names no
// id. A Location that does not parse as a URL
// reference keeps its last segment as it is.
func resourceID(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return path.Base(loc)
	}
	id := path.Base(u.EscapedPath())
	if id == "." || id == "/" {
		return "" // no segment: nothing to re-read
	}
	if u.RawQuery != "" {
		id += "?" + u.RawQuery
	}
	return id
}

// writeAnswer sends an upstream answer to the client.
func writeAnswer(w http.ResponseWriter, a Answer, opID string, replayed bool) {
	h := w.Header()
	for name, vs := range a.Header {
		h[name] = vs
	}
	h.Del("Content-Length")
	h.Set(exchange.HeaderOperationID, opID)
	if replayed {
		h.Set(exchange.HeaderReplayed, "true")
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}
