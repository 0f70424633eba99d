package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Response headers of the idemcoord contract.
const (
	headerReplayed    = "Idempotent-Replayed"
	headerOperationID = "X-Idempotency-Operation-Id"
)

// Response is the final answer to an intent, read in full.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Body is the whole response body.
	Body []byte
	// Replayed reports Idempotent-Replayed: true, meaning the server
	// answered with the response it stored for this key instead of running
	// the request. On a retried intent it usually means an earlier attempt
	// ran and its answer was lost on the way back.
	Replayed bool
	// OperationID is X-Idempotency-Operation-Id: the server's id for the
	// operation behind this key, stable across retries. Empty if the
	// endpoint is not coordinated.
	OperationID string
	// Attempts is how many attempts Do made to get this answer, the first
	// included.
	Attempts int
}

// DecodeJSON unmarshals the body into v.
func (r *Response) DecodeJSON(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("client: decoding %d response: %w", r.Status, err)
	}
	return nil
}

// newResponse wraps a response whose body has been read.
func newResponse(res *http.Response, body []byte, attempt int) *Response {
	return &Response{
		Status:      res.StatusCode,
		Header:      res.Header,
		Body:        body,
		Replayed:    isTrue(res.Header.Get(headerReplayed)),
		OperationID: res.Header.Get(headerOperationID),
		Attempts:    attempt,
	}
}

// isTrue accepts the contract's "true" and the RFC 8941 boolean "?1".
func isTrue(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "true") || v == "?1"
}
