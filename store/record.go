package store

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
)

// Scope identifies one key: the actor scope (tenant and subject from the
// authenticated principal, never the body), the endpoint, and the key.
type Scope struct {
	Actor    string
	Endpoint string
	Key      idempotency.Key
}

// Snapshot is the stored response of a finished operation.
type Snapshot struct {
	// Status is the HTTP status.
	Status int
	// Header holds only allow-listed headers.
	Header http.Header
	// Body is the response body, empty when BodyOmitted.
	Body []byte
	// BodyOmitted is set when the body exceeded the endpoint's cap and was
	// not stored.
	BodyOmitted bool
	// ResourceID names the resource the operation created, if any.
	ResourceID string
}

// Result is what a worker reports when it finishes an operation.
type Result struct {
	// State is COMPLETED, RETRYABLE_FAILURE, TERMINAL_FAILURE,
	// OUTCOME_UNKNOWN or CANCELLED.
	State idempotency.State
	// Snapshot is stored for COMPLETED, TERMINAL_FAILURE and CANCELLED
	// (the cancellation's answer).
	Snapshot Snapshot
	// ErrorSummary is a short, non-sensitive description of a failure.
	ErrorSummary string
	// Stage is the recovery point the answer reported (a RETRYABLE_FAILURE
	// on an endpoint whose retries complete a partly done intent), empty
	// for none. Finish and Resolve record it as the record's last stage in
	// the same write as the result, whichever path learned the answer (the
	// worker, a takeover, a resolve of an OUTCOME_UNKNOWN), so a takeover
	// with ClaimRequest.KeepStages resumes from it and a stage the
	// upstream reported done is never repeated. Empty keeps the last stage
	// as it is.
	Stage string
}

// Record is one stored operation.
type Record struct {
	// Scope is the record's scope. Scope.Key is empty when the record was
	// found by operation id: only the key's hash is stored.
	Scope          Scope
	KeyHash        [32]byte
	OperationID    uuid.UUID
	Fingerprint    idempotency.Fingerprint
	State          idempotency.State
	Version        int64
	LeaseOwner     string
	LeaseExpiresAt time.Time // zero when no lease
	Attempts       int
	LastStage      string
	Token          fencing.Token
	Snapshot       Snapshot
	ErrorSummary   string
	Purged         bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// ExpiresAt is until when the key is honoured: the record's
	// expires_at, plus MarkerTTL while it holds its full answer.
	ExpiresAt time.Time
	// FirstSent is when the client said it first sent the intent
	// (ClaimRequest.FirstSent of the claim that created the record); zero
	// when it did not say.
	FirstSent time.Time
	// Compacted is set once cleanup dropped the record's full answer
	// (headers, body, error summary) after its endpoint's replay_ttl: it
	// is a dedup marker until ExpiresAt.
	Compacted bool
	// Members are the member digests of the request that created the
	// record (ClaimRequest.Members), nil for a record fingerprinted
	// before version 2 or purged.
	Members []byte
	// MarkerTTL is how long the record outlives its full answer as a
	// marker (the endpoint's ttl - replay_ttl when it was claimed), zero
	// for a single-tier record. ExpiresAt includes it.
	MarkerTTL time.Duration
}

// Cancellable reports whether rec may still be cancelled, by the rule a
// store's Cancel enforces: not terminal, and its last stage reversible or
// none. When it may not, stage is what prevents it (the irreversible
// stage, or the terminal state's name when no stage was reported).
func Cancellable(rec Record) (ok bool, stage string) {
	st, err := idempotency.ParseStage(rec.LastStage)
	switch {
	case rec.State.Terminal() && rec.LastStage != "" && err == nil:
		return false, st.Name
	case rec.State.Terminal():
		return false, string(rec.State)
	case rec.LastStage == "":
		return true, ""
	case err != nil || !st.Reversible:
		return false, rec.LastStage
	}
	return true, ""
}
