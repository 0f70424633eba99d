package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/crdb"
)

// storedSnapshot is what is stored of an answer: the snapshot, reduced to
// the replay's Keep fields when the body is not stored whole (reference
// mode, or a body over the cap), with the endpoint's secrets sealed.
func (g *Gateway) storedSnapshot(c *call, a Answer) crdb.Snapshot {
	s := snapshot(c.policy, a)
	r := c.ep.Replay
	if r.Reference() || s.BodyOmitted {
		s.Body, s.BodyOmitted = nil, true
		if kept, ok := keepFields(a.Body, r.Keep); ok && int64(len(kept)) <= c.policy.MaxResponseBytes {
			s.Body = kept
		}
	}
	return g.sealSnapshot(c, s)
}

// keepFields returns a JSON object holding only the values the pointers
// name, at the same places ({"id":..., "card":{"last4":...}}). ok is false
// when there are no pointers, the body is not JSON, or none is found.
func keepFields(body []byte, keep []string) ([]byte, bool) {
	if len(keep) == 0 || len(body) == 0 {
		return nil, false
	}
	pointers := make([][]string, 0, len(keep))
	for _, k := range keep {
		if p, err := config.ParsePointer(k); err == nil {
			pointers = append(pointers, p)
		}
	}
	spans, err := findSpans(body, pointers)
	if err != nil || len(spans) == 0 {
		return nil, false
	}
	root := map[string]any{}
	for _, sp := range spans {
		m, p := root, pointers[sp.field]
		for _, tok := range p[:len(p)-1] {
			next, _ := m[tok].(map[string]any)
			if next == nil {
				next = map[string]any{}
				m[tok] = next
			}
			m = next
		}
		m[p[len(p)-1]] = json.RawMessage(body[sp.start:sp.end])
	}
	out, err := json.Marshal(root)
	return out, err == nil
}

// replayReference answers a replay on a reference endpoint: the resource
// the operation created, read from the upstream now (GET of the
// endpoint's resource_path) under the replaying caller's own
// authorization, with the stored status and Idempotent-Replayed. A
// resource the upstream no longer has is resource-gone: the operation is
// never run again to re-create it.
func (g *Gateway) replayReference(ctx context.Context, c *call, rec crdb.Record) {
	path := strings.Replace(c.ep.Replay.ResourcePath, config.ResourceIDParam, url.PathEscape(rec.Snapshot.ResourceID), 1)
	ctx, cancel := context.WithTimeout(ctx, c.ep.UpstreamTimeout)
	defer cancel()
	req := c.r.Clone(ctx)
	req.Method, req.URL, req.RequestURI = http.MethodGet, &url.URL{Path: path}, ""
	req.Body, req.ContentLength = http.NoBody, 0
	for _, h := range []string{HeaderKey, "Content-Type", "Content-Length", "Content-Encoding"} {
		req.Header.Del(h)
	}
	req.Header.Set(HeaderActor, c.actor)
	req.Header.Set(HeaderOperationID, rec.OperationID.String())
	got := &recorder{header: http.Header{}}
	g.cfg.Next.Pass(got, req)
	opID := rec.OperationID.String()
	switch {
	case got.status == http.StatusNotFound || got.status == http.StatusGone:
		g.refuse(c, "resource_gone", problem{Type: "resource-gone", Title: "the operation completed; its resource no longer exists",
			Detail: "the resource this key created was deleted; it is not created again", Status: http.StatusGone,
			OperationID: opID, OperationState: string(rec.State)})
		return
	case got.status < 200 || got.status > 299:
		g.refuseWait(c, "upstream_unavailable", problem{Type: "upstream-unavailable", Title: "the resource could not be read",
			Detail: "the operation completed; retry with the same key to read its resource", Status: http.StatusBadGateway,
			OperationID: opID, OperationState: string(rec.State)}, time.Second)
		return
	}
	g.metrics.request(ctx, c.ep.Name, "replay", c.start)
	h := c.w.Header()
	for name, vs := range rec.Snapshot.Header {
		h[name] = vs
	}
	if ct := got.header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	for _, name := range []string{"ETag", "Last-Modified"} {
		if v := got.header.Get(name); v != "" {
			h.Set(name, v)
		}
	}
	h.Set(HeaderOperationID, opID)
	h.Set(HeaderReplayed, "true")
	c.w.WriteHeader(rec.Snapshot.Status)
	c.w.Write(got.body.Bytes())
}
