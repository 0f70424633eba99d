package store

import (
	"time"

	"github.com/google/uuid"
)

// Queued is an operation a scan found without a live worker: an async one
// whose lease expired while it was PENDING or IN_PROGRESS, with its stored
// request (Stranded), or one whose holder was fenced out by a move
// (Fenced; Request is nil for a synchronous endpoint's).
type Queued struct {
	// Record is the operation as the scan read it; a takeover is
	// conditioned on its version. Record.Scope.Key is empty (only the
	// key's hash is stored).
	Record Record
	// Request is what SaveRequest stored, opaque to the store.
	Request []byte
}

// Runnable is a share of the stranded work a caller may run: the
// operations of Endpoints on Shards (on every shard with AllShards).
type Runnable struct {
	// Endpoints are endpoint names. Empty: nothing.
	Endpoints []string
	// Shards are shard numbers. Empty: nothing, unless AllShards.
	Shards []int
	// AllShards matches every shard (single-region mode).
	AllShards bool
}

// Cursor is a position in Stranded's order: lease expiry, then operation
// ID. The zero Cursor is the start.
type Cursor struct {
	LeaseExpiresAt time.Time
	OperationID    uuid.UUID
}

// Cursor returns the position of q: a scan after it starts with what
// follows q.
func (q Queued) Cursor() Cursor {
	return Cursor{LeaseExpiresAt: q.Record.LeaseExpiresAt, OperationID: q.Record.OperationID}
}

// StrandedScan asks Stranded (or Fenced) for one page of work.
type StrandedScan struct {
	// Runnable is the work the caller may run; an operation matching no
	// entry is never returned, so work held elsewhere (another region's
	// shard, an endpoint this caller does not serve, a shard its failover
	// policy holds) never fills a page and hides what the caller could
	// run. Empty: nothing is returned.
	Runnable []Runnable
	// After resumes the scan past this position; zero starts at the
	// longest expired. A caller that skips some of a page's operations
	// (a request it cannot decode) pages on with the last one's Cursor,
	// so what it skips never blocks what follows.
	After Cursor
	// Limit bounds the page. Required (> 0).
	Limit int
}
