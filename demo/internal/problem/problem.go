// Package problem writes RFC 9457 problem+json answers and plain JSON
// answers for the demo services.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// TypeBase prefixes every problem type the demo services answer with.
const TypeBase = "https://idemcoord.dev/problems/demo/"

// Details is one problem+json document. Field names the request field (or
// header) that was rejected, so a client and a test can tell which one.
type Details struct {
	// Type is the problem type without TypeBase, e.g. "invalid-request".
	Type string `json:"type"`
	// Title is a short, stable summary of the type.
	Title string `json:"title"`
	// Status repeats the HTTP status.
	Status int `json:"status"`
	// Detail explains this occurrence; it never quotes a request body.
	Detail string `json:"detail,omitempty"`
	// Field names the rejected body field or header, if any.
	Field string `json:"field,omitempty"`
	// OperationID is the operation the answer is about, if any.
	OperationID string `json:"operation_id,omitempty"`
	// RetryAfter, in seconds, is sent as a Retry-After header when > 0.
	RetryAfter int `json:"-"`
}

// Write sends d as application/problem+json with d.Status.
func Write(w http.ResponseWriter, d Details) {
	d.Type = TypeBase + d.Type
	b, err := json.Marshal(d)
	if err != nil { // cannot happen: strings and ints only
		http.Error(w, d.Title, d.Status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	if d.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(d.RetryAfter))
	}
	w.WriteHeader(d.Status)
	w.Write(append(b, '\n'))
}

// Invalid sends a 400 invalid-request problem naming field.
func Invalid(w http.ResponseWriter, field, detail string) {
	Write(w, Details{Type: "invalid-request", Title: "invalid request", Status: http.StatusBadRequest,
		Field: field, Detail: detail})
}

// JSON sends v as application/json with status.
func JSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		Write(w, Details{Type: "internal", Title: "internal error", Status: http.StatusInternalServerError})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
