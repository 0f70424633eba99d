package storetest

import (
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/store"
)

// Region owns every shard of a store Harness.Open returns, at epoch 1.
const Region = "us-east"

// Harness is what the suite needs of a backend: stores on fresh, real
// databases, the time their leases and TTLs run on, and a few hooks that
// reach below the contract (to show that a refused write changed nothing,
// to move a fence the way another region would, to cut a connection
// around a commit). Every field is required.
type Harness struct {
	// Open returns a store on a fresh, empty database whose shards
	// (shard.DefaultCount) are all owned by Region at epoch 1. The
	// store reads lease and TTL time from clock, or from the database's
	// own clock when clock is nil. It is closed when t ends.
	Open func(t *testing.T, clock *Clock) store.Backend
	// Reopen returns another store on s's database, with its own
	// connections (another instance of the service), reading time from
	// clock. It is closed when t ends.
	Reopen func(t *testing.T, s store.Backend, clock *Clock) store.Backend
	// OpenBare is Open without the bootstrap: no shard has an owner and
	// no shard count is recorded.
	OpenBare func(t *testing.T) store.Backend
	// Raw returns actor's records (every record when actor is "") in
	// the backend's own stored form, byte for byte (every field, also
	// those Record does not show), in a stable order.
	Raw func(t *testing.T, s store.Backend, actor string) string
	// SetFence overwrites a shard's fence directly, as a move made
	// elsewhere would leave it (owner "" is a shard without an owner).
	SetFence func(t *testing.T, s store.Backend, shard int, epoch int64, owner string)
	// StoredRequests counts the stored async requests of actor (of every
	// actor when actor is "").
	StoredRequests func(t *testing.T, s store.Backend, actor string) int
	// Faulty opens a second store on s's database whose connection a
	// test cuts around one write (Cutter). ambiguities counts the
	// ambiguous commits the faulty store has settled so far (each one is
	// logged).
	Faulty func(t *testing.T, s store.Backend, clock *Clock) (via store.Backend, cut Cutter, ambiguities func() int)
}

// Op names the write a Cutter cuts.
type Op string

// The writes a Cutter can cut.
const (
	// OpClaim is the statement that inserts or takes over a record.
	OpClaim Op = "claim"
	// OpFinish is the version-conditioned update of a record.
	OpFinish Op = "finish"
)

// Loss is what a cut loses.
type Loss int

// How a cut loses a write.
const (
	// LoseAnswer lets the write reach the database and commit, then drops
	// the connection before its answer arrives.
	LoseAnswer Loss = iota + 1
	// LoseRequest drops the connection as the write is sent: it never
	// reaches the database.
	LoseRequest
)

// Cutter arms a one-shot cut of the faulty store's next write of kind op.
// fired reports whether it cut; remove disarms it.
type Cutter func(t *testing.T, op Op, loss Loss) (fired func() bool, remove func())

// Clock is the lease and TTL time of a store under test, moved by hand:
// no test sleeps out a lease. It is a clock.Clock (the store's DBClock).
type Clock = clock.Fake

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock {
	return clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
}

// suite is the Harness the tests run on.
type suite struct{ Harness }
