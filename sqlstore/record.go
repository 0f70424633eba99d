package sqlstore

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
)

// Sentinel errors.
var (
	// ErrLostOwnership means a version-conditioned update affected no row:
	// another worker took the operation over, or it already finished. The
	// caller must stop and must not report its own result as the answer.
	ErrLostOwnership = errors.New("sqlstore: lost ownership of the operation")
	// ErrNotFound means no record matches.
	ErrNotFound = errors.New("sqlstore: operation not found")
	// ErrFingerprintVersion means a record was fingerprinted with an
	// algorithm version the caller cannot compute.
	ErrFingerprintVersion = errors.New("sqlstore: record's fingerprint version is not supported")
	// ErrNotUnknown means a resolution was attempted on an operation that is
	// not in OUTCOME_UNKNOWN.
	ErrNotUnknown = errors.New("sqlstore: operation is not in OUTCOME_UNKNOWN")
	// ErrNotCancellable means a cancel was attempted on an operation that
	// is terminal, or whose last stage is irreversible.
	ErrNotCancellable = errors.New("sqlstore: operation cannot be cancelled")
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
	// is a dedup marker until ExpiresAt (compact.go).
	Compacted bool
	// MarkerTTL is how long the record outlives its full answer as a
	// marker (the endpoint's ttl - replay_ttl when it was claimed), zero
	// for a single-tier record. ExpiresAt includes it.
	MarkerTTL time.Duration
}

// recordCols is the column list every read returns, in scanRecord's order.
const recordCols = `actor_scope, endpoint, key_hash, operation_id, fingerprint, fingerprint_version, state, version,
	lease_owner, lease_expires_at, attempts, last_stage, shard, epoch, response_status, response_headers,
	response_body, body_omitted, resource_id, error_summary, purged, created_at, updated_at, expires_at, first_sent,
	marker_ttl_ms, compacted`

// scanRecord scans recordCols, preceded by any extra destinations.
func scanRecord(row pgx.Row, r *Record, extra ...any) error {
	var (
		fp         []byte
		keyHash    []byte
		leaseExp   *time.Time
		status     *int32
		headers    []byte
		resourceID *string
		errSummary *string
		state      string
		attempts   int32
		shard      int32
		firstSent  *time.Time
		markerMS   int64
	)
	dest := append(extra, &r.Scope.Actor, &r.Scope.Endpoint, &keyHash, &r.OperationID, &fp, &r.Fingerprint.Version,
		&state, &r.Version, &r.LeaseOwner, &leaseExp, &attempts, &r.LastStage, &shard, &r.Token.Epoch,
		&status, &headers, &r.Snapshot.Body, &r.Snapshot.BodyOmitted, &resourceID, &errSummary,
		&r.Purged, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt, &firstSent, &markerMS, &r.Compacted)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	r.MarkerTTL = time.Duration(markerMS) * time.Millisecond
	r.ExpiresAt = keyExpiresAt(r.ExpiresAt, r.MarkerTTL, r.Compacted)
	if firstSent != nil {
		r.FirstSent = *firstSent
	}
	copy(r.Fingerprint.Sum[:], fp)
	copy(r.KeyHash[:], keyHash)
	r.State = idempotency.State(state)
	r.Attempts = int(attempts)
	r.Token.Shard = int(shard)
	if leaseExp != nil {
		r.LeaseExpiresAt = *leaseExp
	}
	if status != nil {
		r.Snapshot.Status = int(*status)
	}
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &r.Snapshot.Header); err != nil {
			return err
		}
	}
	if resourceID != nil {
		r.Snapshot.ResourceID = *resourceID
	}
	if errSummary != nil {
		r.ErrorSummary = *errSummary
	}
	return nil
}

// stored reports whether a result in state st keeps a response snapshot:
// the states whose answer is replayed.
func stored(st idempotency.State) bool { return st.Terminal() }

// snapshotArgs returns the values stored for a result's snapshot.
func snapshotArgs(res Result) (status *int32, headers []byte, body []byte, resourceID, errSummary *string, err error) {
	if stored(res.State) {
		st := int32(res.Snapshot.Status)
		status = &st
		if len(res.Snapshot.Header) > 0 {
			if headers, err = json.Marshal(res.Snapshot.Header); err != nil {
				return
			}
		}
		body = res.Snapshot.Body
		if res.Snapshot.ResourceID != "" {
			resourceID = &res.Snapshot.ResourceID
		}
	}
	if res.ErrorSummary != "" {
		errSummary = &res.ErrorSummary
	}
	return
}
