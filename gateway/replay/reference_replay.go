package replay

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/store"
)

// representationHeaders describe the bytes of a body: a reference replay
// takes each from the re-read whose body it relays (or drops it when the
// re-read has none), never from the first answer's stored headers. A
// compressing upstream answers the re-read with Content-Encoding: gzip
// when the client accepts it; relaying the bytes without it would label
// gzip as JSON.
var representationHeaders = []string{"Content-Type", "Content-Encoding", "Content-Language", "Content-Length",
	"Content-Range", "ETag", "Last-Modified", "Vary"}

// rereadDropped are the client's request headers a re-read does not carry:
// its own identity (the key, the body's description), and what would make
// the upstream answer with less than the whole current representation (a
// range, a condition answered 304 or 412).
var rereadDropped = []string{exchange.HeaderKey, "Content-Type", "Content-Length", "Content-Encoding",
	"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"}

// replayReference answers a replay on a reference endpoint: the resource
// the operation created, read from the upstream now (GET of the
// endpoint's resource_path) under the replaying caller's own
// authorization, with the stored status and Idempotent-Replayed. A
// resource the upstream no longer has is resource-gone: the operation is
// never run again to re-create it.
//
// The re-read's body is streamed to the client as it arrives, never held
// whole: N concurrent replays of a large resource hold no N copies of it.
// An upstream that fails mid-body cuts the client's connection (the
// status is out by then), so a short body is never taken as whole.
func (st *Stage) replayReference(ctx context.Context, c *exchange.Request, rec store.Record) {
	ctx, cancel := context.WithTimeout(ctx, c.Endpoint.UpstreamTimeout)
	defer cancel()
	req := c.R.Clone(ctx)
	req.Method, req.URL, req.RequestURI = http.MethodGet, referenceURL(c.Endpoint.Replay.ResourcePath, rec.Snapshot.ResourceID), ""
	req.Body, req.ContentLength = http.NoBody, 0
	for _, h := range rereadDropped {
		req.Header.Del(h)
	}
	req.Header.Set(exchange.HeaderActor, c.Actor)
	req.Header.Set(exchange.HeaderOperationID, rec.OperationID.String())
	opID := rec.OperationID.String()
	w := &replayWriter{client: c.W, header: http.Header{}, begin: func(reread http.Header) bool {
		c.Outcomes.Count(ctx, c.Endpoint.Name, "replay", c.Start)
		h := c.W.Header()
		for name, vs := range rec.Snapshot.Header {
			h[name] = vs
		}
		for _, name := range representationHeaders {
			h.Del(name)
			if vs := reread.Values(name); len(vs) > 0 {
				h[name] = vs
			}
		}
		h.Set(exchange.HeaderOperationID, opID)
		h.Set(exchange.HeaderReplayed, "true")
		c.W.WriteHeader(rec.Snapshot.Status)
		return bodyAllowed(rec.Snapshot.Status)
	}}
	st.pass.Pass(w, req)
	w.end()
	switch {
	case w.started:
	case w.status == http.StatusNotFound || w.status == http.StatusGone:
		c.Refuse("resource_gone", exchange.Problem{Type: "resource-gone", Title: "the operation completed; its resource no longer exists",
			Detail: "the resource this key created was deleted; it is not created again", Status: http.StatusGone,
			OperationID: opID, OperationState: string(rec.State)})
	default:
		c.RefuseWait("upstream_unavailable", exchange.Problem{Type: "upstream-unavailable", Title: "the resource could not be read",
			Detail: "the operation completed; retry with the same key to read its resource", Status: http.StatusBadGateway,
			OperationID: opID, OperationState: string(rec.State)}, time.Second)
	}
}

// referenceURL is the re-read's URL: resource_path with {resource_id}
// replaced by the id's path segment, and the id's query string (kept from
// the first answer's Location, see resourceID) as the query. The segment
// is the escaped form Location carried: an escape in it (a%2Fb) is kept
// as such, a character that needs one is escaped.
func referenceURL(resourcePath, id string) *url.URL {
	seg, query, _ := strings.Cut(id, "?")
	raw := strings.Replace(resourcePath, config.ResourceIDParam, seg, 1)
	plain := seg
	if p, err := url.PathUnescape(seg); err == nil {
		plain = p
	}
	// RawPath is used only when it is a valid escaping of Path; otherwise
	// Path is escaped as needed.
	return &url.URL{Path: strings.Replace(resourcePath, config.ResourceIDParam, plain, 1), RawPath: raw, RawQuery: query}
}

// bodyAllowed reports whether an answer of status may carry a body.
func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

// replayWriter takes a reference replay's re-read as the executor passes
// it (a reverse proxy, or the wrapped handler): a 2xx head starts the
// replay (begin writes the client's head from the re-read's headers) and
// its body goes to the client as it comes; any other answer's body is
// dropped, only its status kept, and the caller answers with a problem.
type replayWriter struct {
	client http.ResponseWriter
	header http.Header
	// begin writes the replay's head; it reports whether a body may follow.
	begin func(reread http.Header) bool
	// status is the re-read's final status, 0 until its head.
	status  int
	started bool
	body    bool
}

func (w *replayWriter) Header() http.Header { return w.header }

func (w *replayWriter) WriteHeader(code int) {
	if w.status != 0 || (code >= 100 && code <= 199) {
		return // a second head, or an informational answer
	}
	w.status = code
	if code >= 200 && code <= 299 {
		w.started = true
		w.body = w.begin(w.header)
	}
}

func (w *replayWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if !w.body {
		return len(b), nil
	}
	return w.client.Write(b)
}

// Flush lets a streaming upstream's flushes reach the client.
func (w *replayWriter) Flush() {
	if f, ok := w.client.(http.Flusher); ok && w.started {
		f.Flush()
	}
}

// end settles a re-read that wrote nothing at all (an empty 200).
func (w *replayWriter) end() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
}
