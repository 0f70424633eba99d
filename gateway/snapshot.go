package gateway

import (
	"net/http"
	"path"
	"strconv"

	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/idempotency"
)

// snapshot keeps what a replay needs: status, allow-listed headers, the
// body within the endpoint's cap, and the created resource's id (last
// segment of Location).
func snapshot(p idempotency.Policy, a Answer) crdb.Snapshot {
	s := crdb.Snapshot{Status: a.Status, Header: http.Header{}}
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
		s.ResourceID = path.Base(loc)
	}
	return s
}

// writeSnapshot replays a stored response.
func writeSnapshot(w http.ResponseWriter, rec crdb.Record, replayed bool) {
	h := w.Header()
	for name, vs := range rec.Snapshot.Header {
		h[name] = vs
	}
	h.Set(HeaderOperationID, rec.OperationID.String())
	if replayed {
		h.Set(HeaderReplayed, "true")
	}
	if rec.Snapshot.BodyOmitted || rec.Purged {
		h.Set("Idempotent-Body-Omitted", "true")
	}
	h.Set("Content-Length", strconv.Itoa(len(rec.Snapshot.Body)))
	w.WriteHeader(rec.Snapshot.Status)
	w.Write(rec.Snapshot.Body)
}

// writeAnswer sends an upstream answer to the client.
func writeAnswer(w http.ResponseWriter, a Answer, opID string, replayed bool) {
	h := w.Header()
	for name, vs := range a.Header {
		h[name] = vs
	}
	h.Del("Content-Length")
	h.Set(HeaderOperationID, opID)
	if replayed {
		h.Set(HeaderReplayed, "true")
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}
