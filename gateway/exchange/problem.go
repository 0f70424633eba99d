package exchange

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ProblemBase prefixes every problem type.
const ProblemBase = "https://idemcoord.dev/problems/"

// Problem is an RFC 9457 problem document with idemcoord's extensions.
type Problem struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail,omitempty"`
	OperationID    string `json:"operation_id,omitempty"`
	OperationState string `json:"operation_state,omitempty"`
	// Stage names the stage that prevents a cancel (not-cancellable).
	Stage string `json:"stage,omitempty"`
	// RecordedStatus is the status the operation answered with
	// (replay-expired: the answer itself is no longer kept).
	RecordedStatus int `json:"recorded_status,omitempty"`
	// ResourceID is the id of the resource the operation created, if any
	// (replay-expired).
	ResourceID string `json:"resource_id,omitempty"`
	// ChangedMembers names what of the body differs from the key's
	// stored request (fingerprint-mismatch): RFC 6901 pointers, form
	// part names or "body", never values (members.go).
	ChangedMembers []string `json:"changed_members,omitempty"`
	// NewKeySafe says whether the client may start the intent over under a
	// new key without risking a double effect.
	NewKeySafe bool `json:"new_key_safe"`
}

// WriteProblem writes p; retryAfter > 0 adds Retry-After in whole seconds.
// It is the one place a problem reaches a client; p's detail is written as
// it is (an error reaches it only through Reason, never by its text).
func WriteProblem(w http.ResponseWriter, p Problem, retryAfter time.Duration) {
	p.Type = ProblemBase + p.Type
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	if p.OperationID != "" {
		h.Set(HeaderOperationID, p.OperationID)
	}
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}
