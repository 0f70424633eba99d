// Package fencing holds the fencing token every write to the SQL store
// carries: the shard the actor hashes to (package shard) and the epoch of that shard's
// ownership the writer believes in. The store accepts a write only when the
// token's epoch equals the shard's epoch in its fence table, checked in the
// same serializable transaction as the write, so a region that lost
// ownership can never commit.
package fencing

import (
	"errors"
	"fmt"
)

// ErrStaleEpoch is returned when a write carries an epoch other than the
// shard's current one. The writer has lost (or not yet gained) ownership.
var ErrStaleEpoch = errors.New("fencing: stale epoch")

// Token is the fencing token of one write.
type Token struct {
	// Shard is the shard the actor hashes to, in [0, shards).
	Shard int
	// Epoch is the shard's ownership epoch the writer holds. Epochs start
	// at 1 and only grow.
	Epoch int64
	// Region is the writer's region. The store accepts the write only if
	// the shard's owner region is this one. A shard without an owner (not
	// bootstrapped) admits nobody, whatever the token says.
	Region string
}

// String formats the token for logs.
func (t Token) String() string {
	return fmt.Sprintf("shard=%d epoch=%d region=%q", t.Shard, t.Epoch, t.Region)
}

// StaleEpochError reports a write refused by the fence.
type StaleEpochError struct {
	// Token is what the writer presented.
	Token Token
	// Current is the shard's epoch in the store.
	Current int64
	// Owner is the shard's owner region in the store ("" if the shard was
	// never bootstrapped).
	Owner string
}

// Error implements error.
func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("fencing: stale epoch: %s, store has epoch %d owned by %q", e.Token, e.Current, e.Owner)
}

// Admits reports whether a shard whose fence row holds epoch and owner
// accepts a write carrying t: the same epoch and the token's own region as
// owner. Every shard has an owner once bootstrapped; an empty owner admits
// nobody, so a store nobody bootstrapped refuses every write rather than
// letting every region write every shard.
func (t Token) Admits(epoch int64, owner string) bool {
	return t.Epoch == epoch && owner != "" && owner == t.Region
}

// Unwrap makes errors.Is(err, ErrStaleEpoch) true.
func (e *StaleEpochError) Unwrap() error { return ErrStaleEpoch }
