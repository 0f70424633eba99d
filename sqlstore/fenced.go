package sqlstore

import (
	"context"
	"fmt"

	"github.com/idemcoord/idemcoord/store"
)

// A running record's epoch column is its lease holder's epoch: the claim
// and the takeover write it from the new holder's token, and every later
// write on a running record is the holder's own (heartbeat, stage, finish,
// each fenced by that same token) or ends it (finish, cancel). So a running
// record whose epoch is lower than its shard's fence has a holder that the
// fence refuses: it can never heartbeat, record a stage or record a
// result again, whatever it believes about its lease.
//
// Waiting out such a lease protects only one thing: an upstream call the
// holder already sent, or will still send (a zombie, paused past the move,
// that wakes up believing its lease live). That is the upstream's to
// settle when it deduplicates by operation id: the takeover asks the
// resolve path first (Ran: record that answer; NotRun: run it again under
// the same operation id, which the upstream refuses to run twice if the
// zombie's call lands too; Undetermined: OUTCOME_UNKNOWN, held for the
// resolve path). Everywhere else the lease still rules.

// fencedCond is the takeover update's condition for a live lease whose
// holder is fenced out: the record was last written under an older epoch
// than the writer's token, which the update's fence check ($3 = the
// shard's epoch, under FOR SHARE) makes the shard's current one. $13 is
// ClaimRequest.TakeOverFenced.
const fencedCond = `($13::BOOL AND epoch < $3)`

// fencedOut reports whether req may take over rec, a running record, before
// its lease ends: rec's holder wrote last under an older epoch than req's
// token, and req allows it (ClaimRequest.TakeOverFenced). A stale token
// makes the takeover's fence refuse it; this only decides whether to try.
func fencedOut(req store.ClaimRequest, rec store.Record) bool {
	return req.TakeOverFenced && running(rec.State) && rec.Token.Epoch < req.Token.Epoch
}

// Fenced returns a page of the running operations (PENDING, IN_PROGRESS)
// among scan.Runnable whose record was last written under an older epoch
// than its shard's fence: in flight in a region that has since lost the
// shard, whatever their lease says. Each comes with its stored async
// request (nil for a synchronous endpoint's operation). It only reads: a
// caller takes each over with TakeOver and ClaimRequest.TakeOverFenced,
// which lets only one instance win, and only while the record is as read.
//
// It is meant for the shards a region has just received, not for a
// periodic sweep of everything it owns: the query filters each shard's
// records by state, which the schema does not index (an index on state
// would make every finish a non-HOT update on PostgreSQL). On CockroachDB
// the records' primary key starts with shard, so it reads the given
// shards' ranges; on PostgreSQL it scans the table. scan.After pages as
// for Stranded.
func (s *Store) Fenced(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	if scan.Limit <= 0 {
		return nil, fmt.Errorf("sqlstore: fenced: Limit must be positive, got %d", scan.Limit)
	}
	args := []any{scan.Limit}
	shares, after := scanWhere(scan, &args)
	if shares == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT (SELECT q.request FROM async_requests q WHERE q.operation_id = r.operation_id),
			`+recordCols+`
		FROM idempotency_records r
		WHERE r.state IN ('PENDING', 'IN_PROGRESS')
			AND r.epoch < (SELECT f.epoch FROM shard_fences f WHERE f.shard = r.shard)
			AND `+shares+after+`
		ORDER BY r.lease_expires_at, r.operation_id LIMIT $1`, args...)
	return scanQueued(rows, err, "fenced")
}
