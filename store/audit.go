package store

import (
	"time"

	"github.com/google/uuid"
)

// AuditFilter selects audit rows; zero fields select everything.
type AuditFilter struct {
	// Since keeps rows at or after it.
	Since time.Time
	// Shard, when set, keeps rows about that shard (fence moves and
	// accepts, whose detail starts "shard=N ").
	Shard *int
	// Actor keeps rows about that actor scope.
	Actor string
	// Operation keeps rows about that operation.
	Operation *uuid.UUID
	// Action keeps rows of that action (move_fence, failback, ...).
	Action string
	// Limit caps the rows returned. Default 100.
	Limit int
	// Offset skips that many rows of the selection first (paging).
	Offset int
}

// AuditRow is one repair audit row with its time.
type AuditRow struct {
	// ID is the row's id.
	ID uuid.UUID `json:"id"`
	// At is when it was written (the store's clock).
	At time.Time `json:"at"`
	// Operator, Action and Reason say who did what and why.
	Operator string `json:"operator"`
	Action   string `json:"action"`
	Reason   string `json:"reason"`
	// OperationID and ActorScope name the operation or actor repaired,
	// when the repair was about one.
	OperationID *uuid.UUID `json:"operation_id,omitempty"`
	ActorScope  string     `json:"actor_scope,omitempty"`
	// Detail says what changed.
	Detail string `json:"detail"`
}

// AuditEntry is one row of the repair audit, without its time (AuditLog).
type AuditEntry struct {
	ID          uuid.UUID
	Operator    string
	Action      string
	Reason      string
	OperationID *uuid.UUID
	ActorScope  string
	Detail      string
}
