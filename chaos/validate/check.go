package validate

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// DefaultSlack is how far the database's timestamps (now() is a
// transaction's start, not its commit) and the history's monotonic times
// may disagree before the checker calls it a violation. 500 ms is well
// above a local transaction's length and well below a lease.
const DefaultSlack = 500 * time.Millisecond

// DefaultRegisterTimeout bounds porcupine's search per key; a key's
// history that cannot be decided in time is reported as a register
// violation ("undecided"), never silently passed.
const DefaultRegisterTimeout = 10 * time.Second

// DirectoryEntry is one shard of the etcd ownership directory, as plain
// data (the ownership package is not imported here).
type DirectoryEntry struct {
	// Owner is the owner region, Epoch the ownership epoch, State the
	// shard's state (ACTIVE, FENCING, FAILED_OVER).
	Owner string
	Epoch int64
	State string
}

// DirectoryRevision is one revision of a shard's etcd ownership entry, as
// plain data, for I8.
type DirectoryRevision struct {
	DirectoryEntry
	// Revision is the etcd mod revision that wrote this value.
	Revision int64
	// FromOwner, FromEpoch and FromState are, on a FENCING entry, what the
	// transfer says it replaced; Final is the state it ends in. Empty on
	// other entries.
	FromOwner string
	FromEpoch int64
	FromState string
	Final     string
}

// ShardHistory is every revision of one shard's etcd entry that etcd
// still holds, oldest first.
type ShardHistory struct {
	// Revisions are the entry's values, oldest first.
	Revisions []DirectoryRevision
	// Complete is true when Revisions start at the key's creation; false
	// when etcd compacted the older ones away (the chain is then checked
	// only from the first revision it holds).
	Complete bool
}

// Options tune the checker. The zero value is valid.
type Options struct {
	// Slack is the tolerance between database times and history times.
	// Default DefaultSlack.
	Slack time.Duration
	// RegisterTimeout bounds the register search per key. Default
	// DefaultRegisterTimeout.
	RegisterTimeout time.Duration
	// Directory, if set, is a snapshot of the etcd directory taken after
	// healing: I4 then also checks that etcd and SQL agree on every shard.
	Directory map[int]DirectoryEntry
	// DirectoryHistory, if set, is every shard's etcd revision history,
	// read after healing: I8 then also checks each etcd transition and
	// matches the etcd transfers with the audited SQL fence moves.
	DirectoryHistory map[int]ShardHistory
	// LedgerBody, if set, rebuilds the request body a payment row was
	// created from (amount, currency, reference), so I5 can check that a
	// 422 changed nothing: the resource still matches the key's first body.
	LedgerBody func(amount, currency, reference string) []byte
	// ParseMove reads a fence move from an audit row; ok is false for rows
	// that are not moves. Default ParseMoveAudit.
	ParseMove func(Audit) (m Move, ok bool)
	// InitialOwner, if set, names each shard's owner at epoch 1, so I6 can
	// check the serving region against the owner of the time.
	InitialOwner func(shard int) string
	// AllowUnownedShards skips the liveness check that every shard has an
	// owner (for clusters that have not assigned owners yet).
	AllowUnownedShards bool
}

func (o Options) withDefaults() Options {
	if o.Slack <= 0 {
		o.Slack = DefaultSlack
	}
	if o.RegisterTimeout <= 0 {
		o.RegisterTimeout = DefaultRegisterTimeout
	}
	if o.ParseMove == nil {
		o.ParseMove = ParseMoveAudit
	}
	return o
}

// index joins the history to the state.
type index struct {
	h       history.History
	st      State
	opts    Options
	keys    map[string][]history.Operation
	records map[recordKey]Record
	byRef   map[string][]Payment
	charges map[string][]Charge
	fences  map[int]Fence
	moves   map[int][]Move
}

type recordKey struct {
	actor string
	hash  [32]byte
}

// Check evaluates every invariant and the coverage counters on one run's
// history and final state.
func Check(h history.History, st State, opts Options) Result {
	opts = opts.withDefaults()
	h.Sort()
	ix := &index{h: h, st: st, opts: opts, keys: h.ByKey(), records: map[recordKey]Record{},
		byRef: map[string][]Payment{}, charges: map[string][]Charge{}, fences: map[int]Fence{}}
	for _, r := range st.Records {
		ix.records[recordKey{r.ActorScope, r.KeyHash}] = r
	}
	for _, p := range st.Payments {
		ix.byRef[p.Reference] = append(ix.byRef[p.Reference], p)
	}
	for _, c := range st.Charges {
		ix.charges[c.OperationID] = append(ix.charges[c.OperationID], c)
	}
	for _, f := range st.Fences {
		ix.fences[f.Shard] = f
	}
	ix.moves = movesByShard(st.Audit, opts.ParseMove)

	res := Result{Checked: map[Invariant]int{}}
	add := func(vs ...Violation) { res.Violations = append(res.Violations, vs...) }
	for key, ops := range ix.keys {
		add(ix.checkKey(key, ops, res.Checked)...)
	}
	add(ix.checkCharges()...)
	add(ix.checkEpochs(res.Checked)...)
	add(ix.checkMoves(res.Checked)...)
	add(ix.checkTransitions(res.Checked)...)
	add(ix.checkOverlap(res.Checked)...)
	add(ix.checkLiveness(res.Checked)...)
	lost, replayed := ix.checkAckedLost()
	add(lost...)
	res.AckedLost, res.AckReplayed = len(lost), replayed
	sortViolations(res.Violations)
	res.Coverage = ix.coverage()
	res.Failovers = failovers(st)
	return res
}

// record returns the stored record of a key, if any.
func (ix *index) record(actor, key string) (Record, bool) {
	r, ok := ix.records[recordKey{actor, sha256.Sum256([]byte(key))}]
	return r, ok
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
