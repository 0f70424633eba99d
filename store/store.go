package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
)

// Claims decides keys and records what their runs did. Every write is
// fenced by the token it carries (*fencing.StaleEpochError when the
// shard's epoch or owner is another) and conditioned on the record's
// version (ErrLostOwnership when it moved on). Any method may return
// *RetriesExhaustedError, *UnavailableError or *AmbiguousCommitError.
type Claims interface {
	// Begin claims req's key: a new key is FirstRun (with a Lease), a
	// finished one Replayed, another request under the key Mismatch, a
	// live lease InFlight, an expired lease or a RETRYABLE_FAILURE
	// TakenOver (with a Lease), an OUTCOME_UNKNOWN Unresolved. Of any
	// number of concurrent claims of one key, exactly one owns it. An
	// ambiguous commit is settled inside Begin by claiming again. When
	// that fails too and Begin returns an error (the caller sends
	// nothing), a claim that committed unseen must not hold the key for
	// its whole lease: the backend releases it once it can (RETRYABLE_
	// FAILURE, conditioned on the record still being exactly that claim).
	Begin(ctx context.Context, req ClaimRequest) (Claim, error)
	// Heartbeat extends the lease by its Length from the store's now.
	Heartbeat(ctx context.Context, l *Lease) error
	// RecordStage records the recovery point stage under the lease.
	RecordStage(ctx context.Context, l *Lease, stage string) error
	// Finish records the run's result and ends the lease.
	Finish(ctx context.Context, l *Lease, res Result) error
	// Release gives up l's run, which sent nothing upstream: it records
	// RETRYABLE_FAILURE (summary as its error summary) through the lease,
	// so the next retry runs at once and no mark the lease left (a
	// "sending" stage) makes a later takeover call the outcome unknown. A
	// write of the lease's own whose answer was lost (the handle is
	// behind) does not stop it. When the store does not answer, the
	// backend keeps the release and makes it as soon as it does, as for a
	// claim Begin gave up on, and returns the store's error. A record that
	// moved on (taken over, cancelled, finished) is left alone:
	// ErrLostOwnership.
	Release(ctx context.Context, l *Lease, summary string) error
	// Resolve settles an OUTCOME_UNKNOWN record (as read) with res; it
	// returns ErrNotUnknown when the record is in another state.
	Resolve(ctx context.Context, rec Record, tok fencing.Token, res Result) error
	// Lookup returns the operation opID when it is actor's (ErrNotFound
	// otherwise: another actor's operation is not revealed).
	Lookup(ctx context.Context, actor string, opID uuid.UUID) (Record, error)
	// Read returns the record of a key, for the scope's actor only
	// (ErrNotFound when there is none).
	Read(ctx context.Context, sc Scope) (Record, error)
}

// Queue keeps the requests of async operations and finds the work no
// live worker holds, for another instance to take over.
type Queue interface {
	// SaveRequest stores what running l's operation without its client
	// needs; a second save of the same operation keeps the first.
	SaveRequest(ctx context.Context, l *Lease, request []byte) error
	// DropRequest deletes an operation's stored request.
	DropRequest(ctx context.Context, opID uuid.UUID) error
	// Stranded returns a page of queued operations whose lease expired
	// and whose request is stored, among scan.Runnable, the longest
	// expired first. It only reads.
	Stranded(ctx context.Context, scan StrandedScan) ([]Queued, error)
	// Fenced returns a page of running operations last written under an
	// older epoch than their shard's (their holder was fenced out by a
	// move), among scan.Runnable. It only reads.
	Fenced(ctx context.Context, scan StrandedScan) ([]Queued, error)
	// TakeOver takes over an operation a scan found, with Begin's fenced,
	// version-conditioned takeover: of several callers one wins, the
	// others get ErrLostOwnership.
	TakeOver(ctx context.Context, rec Record, req ClaimRequest) (Claim, error)
}

// Cancels records confirmed cancellations.
type Cancels interface {
	// Cancel records CANCELLED with res.Snapshot as the answer, fenced by
	// tok and conditioned on rec's version and on the record still being
	// cancellable (Cancellable; ErrNotCancellable otherwise), and drops
	// the stored async request in the same transaction.
	Cancel(ctx context.Context, rec Record, tok fencing.Token, res Result) error
}

// Fences holds the authoritative shard fences: each shard's epoch and
// owner region, which every write checks in its own transaction.
type Fences interface {
	// Fence returns a shard's epoch and owner region; a shard without a
	// fence is *fencing.StaleEpochError (it admits nobody).
	Fence(ctx context.Context, shard int) (epoch int64, owner string, err error)
	// MoveFence applies m as a compare-and-swap on m.From, audited; it is
	// a no-op when m was already applied and *fencing.MoveConflictError
	// when the fence holds anything else.
	MoveFence(ctx context.Context, m fencing.Move) error
	// BootstrapFences records the shard count (or returns
	// *ShardCountMismatchError) and gives every unowned shard its home
	// region at epoch 1, never changing an owned one.
	BootstrapFences(ctx context.Context, shards int, home func(shard int) string) error
	// ShardCount returns the bootstrapped shard count, or
	// ErrNotBootstrapped.
	ShardCount(ctx context.Context) (int, error)
	// Fences returns the fences of shards 0 .. ShardCount()-1, by shard.
	Fences(ctx context.Context) ([]FenceRow, error)
}

// Auditor keeps the repair audit: who changed what, when, and why.
type Auditor interface {
	// Audit writes one audit row (ErrNoOperator without an operator or a
	// reason).
	Audit(ctx context.Context, operator, action, reason, detail string) error
	// QueryAudit returns the rows f selects, newest first.
	QueryAudit(ctx context.Context, f AuditFilter) ([]AuditRow, error)
	// CountAudit returns how many rows f selects, Limit and Offset aside.
	CountAudit(ctx context.Context, f AuditFilter) (int, error)
	// AuditLog returns the newest limit entries, newest first.
	AuditLog(ctx context.Context, limit int) ([]AuditEntry, error)
}

// Maintenance is the periodic work of a running daemon.
type Maintenance interface {
	// Cleanup deletes up to batch records past their TTL in resting
	// states, and returns how many it deleted.
	Cleanup(ctx context.Context, batch int) (int, error)
	// Stats counts records by state, stuck running records and the
	// cleanup backlog, each scan bounded by limit rows (<= 0:
	// DefaultStatsLimit). It never changes a record.
	Stats(ctx context.Context, limit int, stuckAfter time.Duration) (Stats, error)
}

// Admin is the operators' repairs (idemctl). Every one names an operator
// and a reason (ErrNoOperator otherwise) and is audited in the
// transaction that makes it.
type Admin interface {
	// Purge erases the personal data of an actor's records (bodies,
	// headers, summaries, stored requests) and marks them purged; the
	// records stay, so a late retry is still recognised and not run
	// again. It returns how many records it purged.
	Purge(ctx context.Context, operator, reason, actor string) (int, error)
	// AdminLookup returns any actor's operation opID.
	AdminLookup(ctx context.Context, operator, reason string, opID uuid.UUID) (Record, error)
	// AdminFind returns any actor's record of a key.
	AdminFind(ctx context.Context, operator, reason string, sc Scope) (Record, error)
	// ReconcileUnknown settles an OUTCOME_UNKNOWN operation by hand.
	ReconcileUnknown(ctx context.Context, operator, reason string, opID uuid.UUID, res Result) error
	// ReconcilePastWindow settles by hand an operation the gateway will
	// never send again because it was first claimed longer ago than its
	// endpoint's downstream window (by the store's clock): a
	// RETRYABLE_FAILURE, or a PENDING or IN_PROGRESS whose lease has
	// expired, to COMPLETED (res: the provider ran it) or, from PENDING
	// or IN_PROGRESS, RETRYABLE_FAILURE (it did not). It returns
	// ErrNotPastWindow, changing nothing, for any other operation.
	ReconcilePastWindow(ctx context.Context, operator, reason string, opID uuid.UUID, window time.Duration, res Result) error
	// ListOperations returns a page of the operations f selects.
	ListOperations(ctx context.Context, operator, reason string, f OperationFilter) (OperationPage, error)
	// AuditedCleanup runs Cleanup's deletion as an audited repair.
	AuditedCleanup(ctx context.Context, operator, reason string, batch int) (int, error)
	// ActorScopes returns up to limit actor scopes of a subject.
	ActorScopes(ctx context.Context, subject string, limit int) ([]string, error)
}

// Store is what the gateway requires of a store: every capability its
// request paths, async recovery, cancel and move sweep use. A backend
// that lacks one does not compile as a Store; nothing is discovered at
// run time.
type Store interface {
	Claims
	Queue
	Cancels
	Fences
	// Ping checks that the store answers (readiness).
	Ping(ctx context.Context) error
}

// Backend is a whole store as a daemon opens it: what the gateway needs,
// the audit the failover controller writes, the daemon's maintenance
// loops, the operators' repairs, the incident ledger, and Close.
type Backend interface {
	Store
	Auditor
	Maintenance
	Admin
	Ledger
	// Close releases the store's connections.
	Close()
}
