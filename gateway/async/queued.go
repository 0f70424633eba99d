package async

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// queuedHeaders are the request headers kept with a queued async request:
// what describes the representation and traces the call, never a
// credential. Authorization, Cookie, API keys and the Idempotency-Key
// itself (the store keeps only its hash) are not stored, so a recovered
// run reaches the upstream without them, identified by
// X-Idempotency-Operation-Id and X-Idempotency-Actor as every run is.
var queuedHeaders = []string{"Accept", "Accept-Language", "Content-Type", "Content-Language", "Content-Encoding",
	"Prefer", "User-Agent", "Traceparent", "Tracestate", "X-Request-Id", "X-Correlation-Id"}

// queuedRequest is the stored form of an async request.
type queuedRequest struct {
	V      int         `json:"v"`
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query,omitempty"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// queuedVersion is the version of queuedRequest this gateway writes and reads.
const queuedVersion = 1

// encodeQueued keeps what running r again needs, without its credentials.
func encodeQueued(r *http.Request, body []byte) ([]byte, error) {
	q := queuedRequest{V: queuedVersion, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: http.Header{}, Body: body}
	for _, name := range queuedHeaders {
		if vs := r.Header.Values(name); len(vs) > 0 {
			q.Header[name] = append([]string(nil), vs...)
		}
	}
	return json.Marshal(q)
}

// decodeQueued rebuilds a stored request, with its body, for ctx.
func decodeQueued(ctx context.Context, b []byte) (*http.Request, []byte, error) {
	var q queuedRequest
	if err := json.Unmarshal(b, &q); err != nil {
		return nil, nil, fmt.Errorf("gateway: stored request: %w", err)
	}
	if q.V != queuedVersion {
		return nil, nil, fmt.Errorf("gateway: stored request version %d, want %d", q.V, queuedVersion)
	}
	u := &url.URL{Path: q.Path, RawQuery: q.Query}
	r, err := http.NewRequestWithContext(ctx, q.Method, u.String(), bytes.NewReader(q.Body))
	if err != nil {
		return nil, nil, fmt.Errorf("gateway: stored request: %w", err)
	}
	if q.Header != nil {
		r.Header = q.Header
	}
	return r, q.Body, nil
}
