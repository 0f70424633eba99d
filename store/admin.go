package store

import "time"

// OperationFilter selects the operations ListOperations returns: those of
// Shards in one of States, optionally of one Endpoint and not changed for
// OlderThan, a page of at most Limit after the cursor After.
type OperationFilter struct {
	// Shards are the shards to list (required: a region's shards, or
	// one).
	Shards []int
	// States are the states to list (required).
	States []string
	// Endpoint keeps one endpoint's operations ("" for all).
	Endpoint string
	// OlderThan keeps operations not updated for this long, by the
	// database's clock (0 for all).
	OlderThan time.Duration
	// Limit is the page size (required, at most 1000).
	Limit int
	// After is the cursor of the previous page's last row ("" for the
	// first page).
	After string
}

// OperationPage is one page of ListOperations.
type OperationPage struct {
	// Operations are the page's records, oldest change first.
	Operations []Record
	// Next is the cursor of the next page, "" on the last page.
	Next string
}

// DefaultStatsLimit bounds the rows one Stats call reads: the counts are
// capped there ("at least this many"), which keeps the periodic query a
// bounded scan however large the table grows. A backlog that reaches the
// cap pages anyway.
const DefaultStatsLimit = 100000

// Stats are bounded counts of the records, for the operator gauges.
type Stats struct {
	// ByState counts records by state (each count capped at the limit).
	ByState map[string]int64
	// Stuck counts PENDING and IN_PROGRESS records whose lease expired
	// more than stuckAfter ago: nobody heartbeats them and no retry took
	// them over.
	Stuck int64
	// CleanupBacklog counts expired records in resting states that
	// cleanup has not deleted yet (read through the expiry index).
	CleanupBacklog int64
}

// FenceRow is one shard's fence as the store holds it.
type FenceRow struct {
	// Shard is the shard number.
	Shard int
	// Epoch is the shard's ownership epoch (1 after bootstrap, +1 per move).
	Epoch int64
	// Owner is the region that may write the shard at Epoch.
	Owner string
}
