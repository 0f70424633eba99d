package sqlstore

import (
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// recordCols is the column list every read returns, in scanRecord's order.
const recordCols = `actor_scope, endpoint, key_hash, operation_id, fingerprint, fingerprint_version, state, version,
	lease_owner, lease_expires_at, attempts, last_stage, shard, epoch, response_status, response_headers,
	response_body, body_omitted, resource_id, error_summary, purged, created_at, updated_at, expires_at, first_sent,
	marker_ttl_ms, compacted, member_digests`

// scanRecord scans recordCols, preceded by any extra destinations.
func scanRecord(row pgx.Row, r *store.Record, extra ...any) error {
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
		opID       pgtype.UUID // binary: uuid.UUID would go through its text form
	)
	dest := append(extra, &r.Scope.Actor, &r.Scope.Endpoint, &keyHash, &opID, &fp, &r.Fingerprint.Version,
		&state, &r.Version, &r.LeaseOwner, &leaseExp, &attempts, &r.LastStage, &shard, &r.Token.Epoch,
		&status, &headers, &r.Snapshot.Body, &r.Snapshot.BodyOmitted, &resourceID, &errSummary,
		&r.Purged, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt, &firstSent, &markerMS, &r.Compacted, &r.Members)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	r.OperationID = opID.Bytes
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
		if err := decodeHeaders(headers, &r.Snapshot.Header); err != nil {
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
func snapshotArgs(res store.Result) (status *int32, headers *string, body []byte, resourceID, errSummary *string, err error) {
	if stored(res.State) {
		st := int32(res.Snapshot.Status)
		status = &st
		headers = headerJSON(res.Snapshot.Header)
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
