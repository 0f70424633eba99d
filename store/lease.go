package store

import (
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
)

// Lease is a worker's ownership of an operation: a handle the store issues
// with a FirstRun or TakenOver claim. Callers read its fields and pass it
// back to Heartbeat, RecordStage, Finish and SaveRequest unchanged; they
// never build one or change it. The store conditions every write through
// it on its Version and its fencing Token and advances Version (and
// ExpiresAt) on success, so a lease that another worker took over, or
// that a move fenced out, can change nothing.
type Lease struct {
	Scope       Scope
	OperationID uuid.UUID
	Owner       string
	Version     int64
	Token       fencing.Token
	ExpiresAt   time.Time
	// RecordExpiresAt is the record's expiry as this lease's claim,
	// takeover or last write left it: until when the key is honoured at
	// least. A takeover extends it (to now + lease + TTL at least), so
	// the Record a Claim carries, read before the takeover, may hold an
	// earlier one.
	RecordExpiresAt time.Time
	// LastStage is the recovery point recorded before this lease (empty on
	// a first run). A takeover resumes from it.
	LastStage string
	Attempts  int
	// KeyHash, Length and TTL are the store's: the stored key's hash (the
	// record's key, also when Scope.Key is empty), the lease length a
	// heartbeat extends by, and the record TTL a finish keeps.
	KeyHash [32]byte
	Length  time.Duration
	TTL     time.Duration
}
