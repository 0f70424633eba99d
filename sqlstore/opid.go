package sqlstore

import "github.com/google/uuid"

// newOperationID returns a new operation id: a time-ordered UUID
// (version 7, RFC 9562). Its first 48 bits are the creation time in Unix
// milliseconds, the next 12 a sub-millisecond counter that keeps one
// process's ids increasing, the last 62 random. New ids land at the end
// of the records' operation-id index instead of on a random leaf, so a
// first run's insert touches the hot right edge of that B-tree rather
// than a leaf that may not be in memory on a large table. An id reveals
// when its operation was created (to the millisecond); lookups by id are
// scoped to the actor, and an upstream deduplicating by id needs it
// unique, not secret.
//
// On CockroachDB an id is random (version 4): there a time-ordered key
// sends every insert of an unsharded index to the same range, the hot
// spot CockroachDB's documentation warns of, while a random key spreads
// the writes over every range; the portable schema's operation-id index
// is not hash-sharded (the multi-region layout's is).
func newOperationID(cockroach bool) uuid.UUID {
	if cockroach {
		return uuid.New()
	}
	return uuid.Must(uuid.NewV7())
}
