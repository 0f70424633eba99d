package ownership

import (
	"encoding/json"
	"fmt"
)

// State is the ownership state of a shard.
type State string

// Shard states.
const (
	// Active: the owner region serves the shard (steady state, and after a
	// planned move, drain or failback).
	Active State = "ACTIVE"
	// Fencing: a transfer is under way; nobody writes the shard until it
	// ends (gateways answer 503 with Retry-After). Entry.Transfer says how
	// to finish it.
	Fencing State = "FENCING"
	// FailedOver: the shard was moved to a failover region because its
	// owner failed. Endpoints with the reject policy refuse its writes.
	FailedOver State = "FAILED_OVER"
)

// Valid reports whether s is a known state.
func (s State) Valid() bool { return s == Active || s == Fencing || s == FailedOver }

// final reports whether a transfer may end in s.
func (s State) final() bool { return s == Active || s == FailedOver }

// Entry is one shard's ownership record.
type Entry struct {
	// Shard is the shard number (from the key, not stored in the value).
	Shard int `json:"-"`
	// Owner is the owning region. While Fencing it is the transfer's
	// target, which does not serve the shard yet.
	Owner string `json:"owner"`
	// Epoch is the fencing epoch the owner writes with. While Fencing it is
	// the epoch the transfer installs (Transfer.FromEpoch + 1).
	Epoch int64 `json:"epoch"`
	// State is the shard's state.
	State State `json:"state"`
	// Transfer is set only while State is Fencing.
	Transfer *Transfer `json:"transfer,omitempty"`
	// ModRevision is the etcd mod revision of the key this entry was read
	// from: the compare-and-swap guard of the next change. Zero for an
	// entry not read from etcd.
	ModRevision int64 `json:"-"`
}

// Transfer records a transfer in progress: everything another mover needs
// to finish it.
type Transfer struct {
	// FromOwner and FromEpoch are what the shard held before the transfer.
	FromOwner string `json:"from_owner"`
	FromEpoch int64  `json:"from_epoch"`
	// FromState is the shard's state before the transfer.
	FromState State `json:"from_state"`
	// Final is the state the transfer ends in (Active or FailedOver).
	Final State `json:"final"`
	// Operator and Reason are the audit trail of whoever started it.
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
}

// Serving reports whether the owner accepts writes for the shard.
func (e Entry) Serving() bool { return e.State == Active || e.State == FailedOver }

// String formats the entry for logs and errors.
func (e Entry) String() string {
	return fmt.Sprintf("shard=%d owner=%q epoch=%d state=%s", e.Shard, e.Owner, e.Epoch, e.State)
}

// decodeEntry parses a stored shard value and checks it.
func decodeEntry(shard int, value []byte, modRev int64) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(value, &e); err != nil {
		return Entry{}, fmt.Errorf("%w: shard %d: %w", ErrCorrupt, shard, err)
	}
	e.Shard, e.ModRevision = shard, modRev
	if !e.State.Valid() || e.Owner == "" || e.Epoch < 1 || (e.State == Fencing) != (e.Transfer != nil) {
		return Entry{}, fmt.Errorf("%w: shard %d: %s", ErrCorrupt, shard, value)
	}
	return e, nil
}

// encode returns the stored value of e.
func (e Entry) encode() string {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // plain strings and integers always marshal
	}
	return string(b)
}
